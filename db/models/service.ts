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
  /** Where the database lives (migration 515): the shared services server, or a `database` server of its own. */
  shape!: 'combined' | 'separate';
  /** A running reshape's target database (its role has the same name) and sealed password. */
  next_database_name!: string | null;
  next_password_sealed!: string | null;
  /** The database a reshape left behind, kept until discard-old-database; the server it lived on, if any. */
  old_database_name!: string | null;
  old_role_name!: string | null;
  old_server_id!: string | null;
  old_since!: Date | null;
  created_at!: Date;
  updated_at!: Date;
}
