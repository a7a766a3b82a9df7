import { BaseModel } from './base-model';

export class Project extends BaseModel {
  static tableName = 'projects';
  team_id!: string;
  name!: string;
  repository_url!: string | null;
  /** The project's own domain allowance; null: DOMAIN_ALLOWANCE. */
  domain_allowance?: number | null;
  created_at!: Date;
  updated_at!: Date;
}
