/**
 * Activity events of changes that are not tasks (CONTRACT "Activity"): written in the same transaction as
 * the change they describe. Tasks are events of their own (the activity listing reads the tasks table).
 */
import type { Knex } from 'knex';
import type { AccountVia, ActivityKind } from '../vocabulary';

interface ActivityInput {
  teamId: string;
  /** Who: a user and how they came (session, cli, token); null for the system. */
  actor: { user: { id: string }; via: AccountVia } | null;
  kind: ActivityKind;
  /** What changed, snake_case: variable_set, domain_added, backup_key_revealed, member_removed, ... */
  type: string;
  projectId?: string | null;
  environmentId?: string | null;
  taskId?: string | null;
  /** The client address of the request, where it matters (key reveals). */
  address?: string | null;
  /** One readable line. Never a secret. */
  summary: string;
  details?: Record<string, unknown>;
}

export async function recordActivity(knex: Knex, e: ActivityInput): Promise<void> {
  await knex('activity_events').insert({
    team_id: e.teamId,
    user_id: e.actor?.user.id ?? null,
    actor_via: e.actor?.via ?? 'system',
    action: e.type,
    kind: e.kind,
    type: e.type,
    project_id: e.projectId ?? null,
    environment_id: e.environmentId ?? null,
    task_id: e.taskId ?? null,
    address: e.address ?? null,
    summary: e.summary,
    details: JSON.stringify(e.details ?? {}),
  });
}

/** Whether an event of `type` was recorded for the task. */
export async function taskActivityRecorded(knex: Knex, taskId: string, type: string): Promise<boolean> {
  const row = await knex('activity_events').where({ task_id: taskId, type }).first('id');
  return Boolean(row);
}

/** Removes the (deleted) environment's events; inside the prune's transaction. */
export async function deleteEnvironmentActivity(trx: Knex.Transaction, environmentId: string): Promise<void> {
  await trx('activity_events').where({ environment_id: environmentId }).delete();
}
