import { BaseModel } from './base-model';

export class Release extends BaseModel {
  static tableName = 'releases';
  team_id!: string;
  project_id!: string;
  environment_id!: string;
  git_ref!: string;
  commit_sha!: string;
  status!: 'building' | 'ready' | 'failed';
  task_id!: string | null;
  built_at!: Date | null;
  commit_message!: string | null;
  created_at!: Date;
}
