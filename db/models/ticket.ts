import { BaseModel } from './base-model';

/** A support ticket of a team; e-mailed to SUPPORT_EMAIL with its attachments. */
export class Ticket extends BaseModel {
  static tableName = 'tickets';
  team_id!: string;
  environment_id!: string | null;
  opened_by!: string | null;
  subject!: string;
  body!: string;
  category!: string;
  status!: 'open' | 'resolved';
  created_at!: Date;
  resolved_at!: Date | null;
}
