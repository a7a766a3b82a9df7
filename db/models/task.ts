import { BaseModel } from './base-model';
import type { AccountVia, TaskKind, TaskStatus } from '../vocabulary';

export class Task extends BaseModel {
  static tableName = 'tasks';
  seq!: number;
  team_id!: string;
  project_id!: string | null;
  environment_id!: string | null;
  kind!: TaskKind;
  type!: string;
  status!: TaskStatus;
  account_user_id!: string | null;
  account_via!: AccountVia;
  workflow_id!: string;
  run_id!: string | null;
  params!: Record<string, unknown>;
  result!: Record<string, unknown> | null;
  error!: string | null;
  created_at!: Date;
  started_at!: Date | null;
  finished_at!: Date | null;
  /** When each phase ended (db/queries/task-phases.ts); read through taskPhases(). */
  phases?: Record<string, string> | null;
}
