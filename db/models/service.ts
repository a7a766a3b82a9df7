import { BaseModel } from './base-model';

/** A database service of an environment (a PostgreSQL database with its own role). */
export class Service extends BaseModel {
  static tableName = 'services';
  team_id!: string;
  project_id!: string;
  environment_id!: string;
  kind!: 'postgresql';
  version!: string;
  plan!: string;
  status!: 'creating' | 'available' | 'failed';
  server_id!: string | null;
  task_id!: string | null;
  database_name!: string;
  role_name!: string;
  password_sealed!: string;
  created_at!: Date;
  updated_at!: Date;
}
