import { BaseModel } from './base-model';

/** A team's webhook or Slack integration. `sealed_secret` is its signing key or Slack URL, sealed (system/crypto.ts). */
export class Integration extends BaseModel {
  static tableName = 'integrations';
  team_id!: string;
  kind!: 'webhook' | 'slack';
  name!: string;
  events!: string[];
  /** The non-secret fields: a webhook's `display_url` (query values redacted; a row not sealed yet: `url`). */
  config!: Record<string, string>;
  /** A webhook's URL, sealed (db/queries/integrations.ts). */
  sealed_url!: string | null;
  sealed_secret!: string;
  created_by!: string | null;
  created_at!: Date;
  updated_at!: Date;
}
