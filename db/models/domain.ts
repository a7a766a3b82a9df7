import { BaseModel } from './base-model';

/** A custom domain of an environment; served by the edge once verified through its TXT record. */
export class Domain extends BaseModel {
  static tableName = 'domains';
  team_id!: string;
  project_id!: string;
  environment_id!: string;
  hostname!: string;
  verification_value!: string;
  status!: 'pending' | 'verified';
  verified_at!: Date | null;
  last_checked_at!: Date | null;
  created_at!: Date;
  updated_at!: Date;
}
