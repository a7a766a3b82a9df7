import { BaseModel } from './base-model';

/** One sample of an environment's usage (migration 500), written by the worker's sampler. */
export class ResourceSample extends BaseModel {
  static tableName = 'resource_samples';
  static idColumn = ['environment_id', 'at'];
  environment_id!: string;
  at!: Date;
  /** Percent of one core, averaged since the previous sample. */
  cpu!: number;
  memory_bytes!: number;
  disk_bytes!: number;
}
