import { BaseModel } from './base-model';

/** Per user and team: when they last looked at the activity (the bell) and whether they hid the next steps. */
export class TeamMemberState extends BaseModel {
  static tableName = 'team_member_state';
  static idColumn = ['team_id', 'user_id'];
  team_id!: string;
  user_id!: string;
  activity_seen_at!: Date | null;
  next_steps_hidden_at!: Date | null;
}
