import { BaseModel } from './base-model';

/** A team's webhook or Slack integration. `sealed_secret` is its signing key or Slack URL, sealed (system/crypto.ts). */
export class Integration extends BaseModel {
  static tableName = 'integrations';
  team_id!: string;
  kind!: 'webhook' | 'slack';
  name!: string;
  events!: string[];
  /** The non-secret fields (a webhook's URL). */
  config!: Record<string, string>;
  sealed_secret!: string;
  created_by!: string | null;
  created_at!: Date;
  updated_at!: Date;
}
