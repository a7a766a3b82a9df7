import { BaseModel } from './base-model';

/** One snapshot of an environment's data at a destination. */
export class Backup extends BaseModel {
  static tableName = 'backups';
  team_id!: string;
  project_id!: string;
  environment_id!: string;
  destination_id!: string | null;
  task_id!: string | null;
  status!: 'running' | 'available' | 'failed';
  trigger!: 'manual' | 'scheduled';
  contents!: string[];
  object_key!: string;
  size_bytes!: string | number | null;
  sha256!: string | null;
  key_fingerprint!: string;
  error!: string | null;
  created_at!: Date;
  finished_at!: Date | null;
}
