/**
 * Restore drills (CONTRACT "Point-in-time recovery"): a `backups`/`verify` task per snapshot, asked for by a
 * person (POST /environments/{id}/backups/{snapshot}/verify) or by the daily `restore-drills` schedule (the
 * newest available snapshot of every environment); and what a drill's outcome leaves: the snapshot's
 * `verified_at` and `verify_error`, and when it failed, the activity event `backups`/`verify_failed` and the
 * integration event `backup.verify_failed` (to the integrations the project's rule names).
 */
import type { Deps } from '../../system/deps';
import type { Environment } from '../../db/models/environment';
import { recordActivity, taskActivityRecorded } from '../../db/queries/activity';
import { storedRule } from '../../db/queries/notification-rules';
import { mailProjectEvent } from '../event-emails';
import { drilledSnapshot, recordDrillError } from '../../db/queries/backups';
import { emitIntegrationEvent } from '../integration-events';
import { startTask, type TaskRequester } from '../tasks';

type EnvRow = Pick<Environment, 'id' | 'team_id' | 'project_id' | 'name'>;

export async function startVerifyTask(deps: Deps, by: TaskRequester, env: EnvRow, snapshotId: string) {
  return startTask(deps, by, {
    type: 'verify',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: { backup_id: snapshotId },
    summary: `Restore drill of snapshot ${snapshotId} of ${env.name}`,
  });
}

/**
 * One run of the `restore-drills` schedule: a verify task for the newest available snapshot of every
 * environment, unless a drill of that environment is pending or running already. Answers the started task ids.
 */
export async function startRestoreDrills(deps: Deps): Promise<string[]> {
  const newest: Array<EnvRow & { backup_id: string }> = (
    await deps.knex.raw(
      `SELECT DISTINCT ON (b.environment_id) b.id AS backup_id, e.id, e.team_id, e.project_id, e.name
         FROM backups b JOIN environments e ON e.id = b.environment_id
        WHERE b.status = 'available' AND b.destination_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.environment_id = e.id AND t.type = 'verify'
                                                  AND t.status IN ('pending', 'running'))
        ORDER BY b.environment_id, b.created_at DESC, b.id DESC`,
    )
  ).rows;
  const started: string[] = [];
  for (const row of newest) {
    const task = await startVerifyTask(deps, { via: 'schedule', userId: null }, row, row.backup_id);
    started.push(task.id);
  }
  return started;
}

/**
 * A drill failed (its task `taskId`): the snapshot keeps why, the team's activity says so, and the integrations
 * the project's rule for `backup.verify_failed` names hear of it. Recording it again (a retried step) changes
 * nothing more: the activity event is written once per task, and the event id is the task's.
 */
export async function recordDrillFailed(
  deps: Pick<Deps, 'knex' | 'temporal' | 'config' | 'mailer' | 'logger'>,
  e: { taskId: string; backupId: string; reason: string },
): Promise<void> {
  const { knex } = deps;
  const row = await drilledSnapshot(knex, e.backupId);
  if (!row) return; // the snapshot was deleted meanwhile: nothing is left to be wrong
  const first = await knex.transaction(async (trx) => {
    await recordDrillError(trx, row.id, e.reason);
    const recorded = await taskActivityRecorded(trx, e.taskId, 'verify_failed');
    if (!recorded)
      await recordActivity(trx, {
        teamId: row.team_id,
        actor: null,
        kind: 'backups',
        type: 'verify_failed',
        projectId: row.project_id,
        environmentId: row.environment_id,
        taskId: e.taskId,
        summary: `Restore drill of snapshot ${row.id} of ${row.environment_name} failed: ${e.reason}`.slice(0, 1000),
        details: { backup_id: row.id },
      });
    return !recorded;
  });
  const rule = await storedRule(knex, row.project_id, 'backup.verify_failed');
  await emitIntegrationEvent(
    deps,
    {
      teamId: row.team_id,
      event: 'backup.verify_failed',
      eventId: `evt_backup_verify_failed_${e.taskId}`,
      data: {
        backup: { id: row.id, created_at: new Date(row.created_at).toISOString() },
        task: { id: e.taskId, url: `${deps.config.baseUrl}/api/vc/v1/tasks/${e.taskId}` },
        project: { id: row.project_id, name: row.project_name },
        environment: { id: row.environment_id, name: row.environment_name },
        reason: e.reason,
      },
    },
    rule?.integration_ids,
  );
  // e-mailed once, when the failure is first recorded (a retried step records nothing new)
  if (first && rule)
    await mailProjectEvent(
      deps,
      { teamId: row.team_id, email: rule.email, event: 'backup.verify_failed' },
      {
        subject: `A snapshot of ${row.project_name} / ${row.environment_name} did not restore`,
        what: `The restore drill of the snapshot of ${new Date(row.created_at).toISOString()} of ${row.project_name} / ${row.environment_name} failed`,
        detail: `${e.reason.replace(/\.?$/, '.')} Until a snapshot passes its drill, do not count on it: take a backup now, then verify it from the environment's Backups.`,
        button: { label: 'See the task', url: `${deps.config.baseUrl}/tasks/${e.taskId}` },
      },
    );
}
