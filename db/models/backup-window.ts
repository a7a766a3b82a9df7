import { BaseModel } from './base-model';

/** A project's daily backup window (none: the default). Keyed by project_id. */
export class BackupWindow extends BaseModel {
  static tableName = 'backup_windows';
  static idColumn = 'project_id';
  project_id!: string;
  hour_utc!: number;
  retention_days!: number;
  destination_id!: string | null;
  created_at!: Date;
  updated_at!: Date;
}
