import { BaseModel } from './base-model';

export class EmailConfirmation extends BaseModel {
  static tableName = 'email_confirmations';
  user_id!: string;
  code_digest!: string;
  expires_at!: Date;
  used_at!: Date | null;
  created_at!: Date;
}
