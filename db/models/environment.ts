import { BaseModel } from './base-model';

export class Environment extends BaseModel {
  static tableName = 'environments';
  team_id!: string;
  project_id!: string;
  name!: string;
  git_ref!: string;
  auto_deploy!: boolean;
  port!: number;
  live_release_id!: string | null;
  protected!: boolean;
  backup_key_sealed!: string | null;
  maintenance_on!: boolean;
  maintenance_note!: string | null;
  maintenance_since!: Date | null;
  /** The commit the last auto-deploy was started for (core/projects/auto-deploy.ts). */
  auto_deploy_sha?: string | null;
  auto_deploy_checked_at?: Date | null;
  /** Set when its project was cancelled: its web process is stopped and nothing deploys here. */
  stopped_at?: Date | null;
  created_at!: Date;
  updated_at!: Date;
}
