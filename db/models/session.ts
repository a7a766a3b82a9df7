import { BaseModel } from './base-model';

export class Session extends BaseModel {
  static tableName = 'sessions';
  secret_digest!: string;
  user_id!: string;
  kind!: 'browser' | 'cli';
  csrf_token!: string;
  authenticated_at!: Date;
  last_seen_at!: Date;
  expires_at!: Date;
  ended_at!: Date | null;
  created_at!: Date;
}
