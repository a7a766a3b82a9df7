import { BaseModel } from './base-model';

/** The machine an environment's builds run on (migration 500); no row: the default plan. */
export class BuildMachine extends BaseModel {
  static tableName = 'build_machines';
  static idColumn = 'environment_id';
  environment_id!: string;
  provider!: string;
  plan!: string;
  cpu!: string | number;
  memory_mb!: number;
  updated_at!: Date;
}
