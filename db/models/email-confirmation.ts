import { BaseModel } from './base-model';

export class EmailConfirmation extends BaseModel {
  static tableName = 'email_confirmations';
  user_id!: string;
  code_digest!: string;
  expires_at!: Date;
  used_at!: Date | null;
  /** The password (hash) and name of the sign-up the code was sent for; null on codes older than that rule. */
  password_hash!: string | null;
  name!: string | null;
  created_at!: Date;
}
