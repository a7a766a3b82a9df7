import { Model } from 'objection';
import type { HostSettings } from '../queries/worker-settings';

/** A ready worker process (migration 122); see core/worker-readiness.ts. */
export class WorkerHeartbeat extends Model {
  static tableName = 'worker_heartbeats';
  static idColumn = 'identity';
  identity!: string;
  task_queue!: string;
  started_at!: Date;
  ready_at!: Date;
  seen_at!: Date;
  /** What it found about the host's settings at its start (migration 550). */
  settings!: HostSettings | null;
  /** Its host, HOST_NAME (migration 691); null: a worker of before. */
  host!: string | null;
}
