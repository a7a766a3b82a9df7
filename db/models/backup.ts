import { BaseModel } from './base-model';

/** Row counts of every table (`schema.table`), taken in the dump's snapshot, and the tar's entry count. */
export interface SnapshotCounts {
  tables: Record<string, number> | null;
  files: number | null;
}

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
  /** What the backup recorded of its data (migration 650): null before restore drills existed. */
  counts!: SnapshotCounts | null;
  verified_at!: Date | null;
  verify_error!: string | null;
  created_at!: Date;
  finished_at!: Date | null;
}
