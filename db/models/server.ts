import type { WebCrash } from '../queries/machines';
import { BaseModel } from './base-model';

/** A machine an environment runs on (migration 500): its plan, and the size that plan gave it. */
export class Server extends BaseModel {
  static tableName = 'servers';
  team_id!: string;
  project_id!: string;
  environment_id!: string;
  role!: 'web' | 'database';
  name!: string;
  plan!: string;
  /** numeric in PostgreSQL: read as a string by pg, see `serverLimits`. */
  cpu!: string | number;
  memory_mb!: number;
  disk_gb!: number;
  /** How many instances run (the `web` server's web processes behind the edge, migration 510). */
  instances!: number;
  /** `old`: a database server whose database moved away, kept until discard-old-database (migration 515). */
  status!: 'running' | 'resizing' | 'rebooting' | 'old';
  /** The host a `web` server is placed on (core/placement.ts); null: created before placement (migration 670). */
  host!: string | null;
  /** While its live web processes keep exiting: what its host last saw (migration 770, db/queries/machines.ts). */
  crash!: WebCrash | null;
  created_at!: Date;
  updated_at!: Date;
}
