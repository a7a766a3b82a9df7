/**
 * reshapeEnvironment (`machines`/`reshape`, exclusive on the environment): moves the environment's database
 * to a `database` server of its own, or back onto the shared services server. The data is copied into a new
 * database with a new login and verified, the web process restarted on the new DATABASE_URL, the record
 * switched; the old database is kept until discardOldDatabase (`machines`/`discard_old_database`) drops it.
 * A failure anywhere before the switch leaves the environment on its database, writable again, the copy dropped.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ReshapeActivities } from '../activities/machines/reshape';
import { describeError, failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';
import { afterSwap } from './pitr';

/** Copying and restarting are long: heartbeats say the worker lives; a rerun starts the copy afresh. */
const long = proxyActivities<ReshapeActivities>(profiles.long);
const quick = proxyActivities<ReshapeActivities>(profiles.quick);

export async function reshapeEnvironment(input: TaskWorkflowInput<'reshape'>) {
  const ids = { taskId: input.task.id, environmentId: input.task.environment_id! };
  return runTask(input, async ({ params: p, log, start }) => {
    await start();
    await log(
      p.shape === 'separate'
        ? `==> Moving the database to a database server of its own (plan ${p.plan?.id})`
        : '==> Moving the database back onto the shared services server',
    );
    let copied: { tables: number; rows: number; paused_at: number };
    let switched: { server_id: string | null; writes_paused_ms: number | null };
    try {
      copied = await long.reshapeCopy(ids);
      switched = await long.reshapeSwitch({
        ...ids,
        target: { shape: p.shape, plan: p.plan ?? undefined },
        pausedAt: copied.paused_at,
      });
    } catch (err) {
      await quick.reshapeAbandon(ids);
      return failure(`${describeError(err)}; the database stays ${p.from_shape}`);
    }
    await log(`==> The database is ${p.shape}; the old one is kept until POST .../discard-old-database`);
    await afterSwap(input.task.id);
    return {
      shape: p.shape,
      server_id: switched.server_id,
      tables: copied.tables,
      rows: copied.rows,
      writes_paused_ms: switched.writes_paused_ms,
    };
  });
}

export async function discardOldDatabase(input: TaskWorkflowInput<'discard_old_database'>) {
  const ids = { taskId: input.task.id, environmentId: input.task.environment_id! };
  return runTask(input, async ({ log, start }) => {
    await start();
    await log('==> Discarding the database the last reshape left behind');
    try {
      return await quick.discardOldDatabase(ids);
    } catch (err) {
      return failure(describeError(err));
    }
  });
}
