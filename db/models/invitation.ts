import { BaseModel } from './base-model';

export class Invitation extends BaseModel {
  static tableName = 'invitations';
  team_id!: string;
  email!: string;
  role!: 'owner' | 'admin' | 'developer' | 'viewer';
  invited_by!: string | null;
  expires_at!: Date;
  accepted_at!: Date | null;
  revoked_at!: Date | null;
  created_at!: Date;
  updated_at!: Date;
}
