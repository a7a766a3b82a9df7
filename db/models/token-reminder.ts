import { BaseModel } from './base-model';

export class TokenReminder extends BaseModel {
  static tableName = 'token_reminders';
  token_id!: string;
  reminder_key!: string;
  sent_at!: Date | null;
  created_at!: Date;
}
