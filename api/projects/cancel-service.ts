/**
 * Cancelling a project (CONTRACT "Projects: the rest"): `GET /projects/{id}/cancel` says what ends; `POST
 * {confirm: true}` ends its subscriptions at once, marks its environments stopped (no deploy, no
 * auto-deploy), and starts the workflow that stops their web processes (the edge then answers 503
 * "stopped"). Their data (releases, volumes, database services) is kept CANCELLED_PROJECT_KEEP_DAYS (30)
 * days; the daily prune (`prune-expired`) deletes the environments after that, and the empty project can
 * then be deleted (`DELETE /projects/{id}`).
 */
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { recordActivity } from '../../db/queries/activity';
import { projectEnvironmentsStopped, stopProjectEnvironments } from '../../db/queries/environments';
import { startProjectStop } from '../../core/temporal-starts';
import { iso, isoOrNull } from '../../core/time';
import { CANCELLED_PROJECT_KEEP_DAYS } from '../../core/projects/cancel';

const DAY_MS = 86_400_000;

async function subscriptionsOf(knex: Deps['knex'], projectId: string) {
  return knex('subscriptions')
    .where({ project_id: projectId })
    .whereIn('status', ['active', 'cancelling'])
    .orderBy([{ column: 'started_at' }, { column: 'order' }])
    .select('order', 'kind', 'item', 'monthly_price', 'currency', 'status', 'environment_id');
}

/** What cancelling ends: the subscriptions that run, the environments that stop, and when data goes. */
export async function cancelChoices(deps: Deps, projectId: string) {
  const project = await deps.knex('projects').where({ id: projectId }).first('id', 'name', 'cancelled_at');
  if (!project) throw errors.notFound('project');
  const subscriptions = await subscriptionsOf(deps.knex, projectId);
  const environments = await projectEnvironmentsStopped(deps.knex, projectId);
  const deleteAfter = project.cancelled_at
    ? new Date(new Date(project.cancelled_at).getTime() + CANCELLED_PROJECT_KEEP_DAYS * DAY_MS)
    : null;
  return {
    project_id: project.id,
    cancelled_at: isoOrNull(project.cancelled_at),
    data_kept_days: CANCELLED_PROJECT_KEEP_DAYS,
    data_deleted_after: deleteAfter ? iso(deleteAfter) : null,
    subscriptions: subscriptions.map((s: Record<string, string>) => ({
      order: s.order,
      kind: s.kind,
      item: s.item,
      monthly_price: Number(s.monthly_price).toFixed(2),
      currency: s.currency,
      environment_id: s.environment_id ?? null,
    })),
    environments: environments.map((e: { id: string; name: string; stopped_at: Date | null }) => ({
      id: e.id,
      name: e.name,
      stopped: Boolean(e.stopped_at),
    })),
    message: project.cancelled_at
      ? `The project was cancelled; its data is deleted after ${iso(deleteAfter!)}`
      : `Cancelling ends ${count(subscriptions.length, 'subscription')} now and stops ${count(environments.length, 'environment')}; ` +
        `their data is kept ${CANCELLED_PROJECT_KEEP_DAYS} days, then deleted`,
  };
}

/** Cancels the project (see the file comment); 409 when it is cancelled already or a task runs on it. */
export async function cancelProject(deps: Deps, actor: Actor, projectId: string) {
  const trx = await deps.knex.transaction();
  try {
    const project = await trx('projects')
      .where({ id: projectId })
      .forUpdate()
      .first('id', 'team_id', 'name', 'cancelled_at');
    if (!project) throw errors.notFound('project');
    if (project.cancelled_at) throw appError('conflict', 'The project is cancelled already');
    const running = await trx('tasks')
      .where({ project_id: projectId })
      .whereNotNull('environment_id')
      .whereIn('status', ['pending', 'running'])
      .orderBy('seq')
      .first('id');
    if (running) {
      throw errors.conflict(
        'task_in_progress',
        'A task is pending or running on an environment of this project; wait for it or cancel it first',
        { task_id: running.id },
      );
    }
    const ended = await trx('subscriptions')
      .where({ project_id: projectId })
      .whereIn('status', ['active', 'cancelling'])
      .update({ status: 'ended', ended_at: trx.fn.now(), cancelled_by: actor.user.id })
      .returning('order');
    const envIds = await stopProjectEnvironments(trx, projectId);
    await trx('projects').where({ id: projectId }).update({ cancelled_at: trx.fn.now(), updated_at: trx.fn.now() });
    await recordActivity(trx, {
      teamId: project.team_id,
      actor,
      kind: 'configuration',
      type: 'project_cancelled',
      projectId,
      summary: `cancelled project ${project.name}: ${count(ended.length, 'subscription')} ended, ${count(envIds.length, 'environment')} stopped`,
      details: { orders: ended.map((r: { order: string }) => r.order), environment_ids: envIds },
    });
    // The stop is started before the commit: a refused start leaves nothing changed.
    await startProjectStop(deps, { id: projectId, team_id: project.team_id, name: project.name }, envIds);
    await trx.commit();
  } catch (err) {
    await trx.rollback().catch(() => undefined);
    throw err;
  }
  return cancelChoices(deps, projectId);
}

/** "1 environment", "2 environments". */
const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
