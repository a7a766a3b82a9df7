import { BaseModel } from './base-model';

export class ActivityEvent extends BaseModel {
  static tableName = 'activity_events';
  team_id!: string | null;
  user_id!: string | null;
  action!: string;
  details!: Record<string, unknown>;
  created_at!: Date;
}
