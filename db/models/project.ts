import { BaseModel } from './base-model';

export class Project extends BaseModel {
  static tableName = 'projects';
  team_id!: string;
  name!: string;
  /** Without credentials; those are in repository_credentials, sealed (core/repository.ts). */
  repository_url!: string | null;
  /** The project's own domain allowance; null: DOMAIN_ALLOWANCE. */
  domain_allowance?: number | null;
  repository_credentials!: string | null;
  /** Set when the project was cancelled (api/projects/cancel-service.ts). */
  cancelled_at?: Date | null;
  /** Sealed: the secret that signs POST /hooks/git/{project_id} (api/projects/repository-service.ts). */
  webhook_secret?: string | null;
  created_at!: Date;
  updated_at!: Date;

  /** Never serialised: the sealed credentials stay in the database. */
  $formatJson(json: Record<string, unknown>) {
    const out = super.$formatJson(json);
    delete out.repository_credentials;
    delete out.webhook_secret;
    return out;
  }
}
