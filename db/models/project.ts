import { BaseModel } from './base-model';

export class Project extends BaseModel {
  static tableName = 'projects';
  team_id!: string;
  name!: string;
  repository_url!: string | null;
  created_at!: Date;
  updated_at!: Date;
}
