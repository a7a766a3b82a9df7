import { BaseModel } from './base-model';

export class Membership extends BaseModel {
  static tableName = 'memberships';
  team_id!: string;
  user_id!: string;
  role!: 'owner' | 'admin' | 'developer' | 'viewer';
  created_at!: Date;
  updated_at!: Date;
}
