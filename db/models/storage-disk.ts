import { BaseModel } from './base-model';

export type DiskName = 'database' | 'files';

/**
 * One of an environment's two disks (migration 520): `database` (its service database's tablespace) or
 * `files` (its volume, VC_VOLUME_PATH; the row's id is the volume's id). `location` is the root of
 * STORAGE_ROOTS it lives under; `old_location` the root the copy left by the last move is kept under.
 */
export class StorageDisk extends BaseModel {
  static tableName = 'storage_disks';
  team_id!: string;
  project_id!: string;
  environment_id!: string;
  disk!: DiskName;
  size_gb!: number;
  location!: string;
  old_location!: string | null;
  generation!: number;
  old_generation!: number | null;
  created_at!: Date;
  updated_at!: Date;
}
