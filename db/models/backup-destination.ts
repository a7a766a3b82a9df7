import { BaseModel } from './base-model';

/** Where a team's snapshots are kept: a local directory or an S3-compatible bucket. */
export class BackupDestination extends BaseModel {
  static tableName = 'backup_destinations';
  team_id!: string;
  name!: string;
  kind!: 'local' | 's3';
  settings!: Record<string, string>;
  secrets_sealed!: string | null;
  /** Why its last backup was refused or failed (null: the last one worked, or none was taken). */
  last_error!: string | null;
  last_error_at!: Date | null;
  created_at!: Date;
  updated_at!: Date;
}
