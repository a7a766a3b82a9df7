import { BaseModel } from './base-model';

/** A project variable (environment_id null) or an environment's own value. The value is kept sealed. */
export class Variable extends BaseModel {
  static tableName = 'variables';
  team_id!: string;
  project_id!: string;
  environment_id!: string | null;
  name!: string;
  value_sealed!: string;
  secret!: boolean;
  created_at!: Date;
  updated_at!: Date;
}
