import { BaseModel } from './base-model';

export class Deployment extends BaseModel {
  static tableName = 'deployments';
  environment_id!: string;
  release_id!: string;
  task_id!: string;
  type!: string;
  skip_steps!: boolean;
  went_live_at!: Date;
}
