import { BaseModel } from './base-model';

export class Team extends BaseModel {
  static tableName = 'teams';
  name!: string;
  settings!: Record<string, unknown>;
  created_at!: Date;
  updated_at!: Date;
}
