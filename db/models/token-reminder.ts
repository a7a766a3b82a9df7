import { BaseModel } from './base-model';

export class TokenReminder extends BaseModel {
  static tableName = 'token_reminders';
  token_id!: string;
  reminder_key!: string;
  /** The UTC day of the run that claimed it (migration 050); a token is reminded at most once in 7 such days. */
  reminder_date!: Date;
  sent_at!: Date | null;
  created_at!: Date;
}
