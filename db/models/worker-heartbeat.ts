import { Model } from 'objection';

/** A ready worker process (migration 122); see system/worker-readiness.ts. */
export class WorkerHeartbeat extends Model {
  static tableName = 'worker_heartbeats';
  static idColumn = 'identity';
  identity!: string;
  task_queue!: string;
  started_at!: Date;
  ready_at!: Date;
  seen_at!: Date;
}
