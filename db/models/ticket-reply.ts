import { BaseModel } from './base-model';

export class TicketReply extends BaseModel {
  static tableName = 'ticket_replies';
  ticket_id!: string;
  user_id!: string | null;
  body!: string;
  resolved!: boolean;
  created_at!: Date;
}
