/**
 * A worker process told to stop (SIGTERM, as npm start's supervisor and systemd do) while the rest of its start
 * runs: it already takes tasks (its Temporal workers poll) but has not announced itself ready. It must stop as it
 * does later: its own handler runs, lets the start end, withdraws its readiness, closes the database and exits.
 * Before, only the Temporal runtime's handler took the signal there: the Temporal workers stopped and the process
 * stayed, neither ready nor exiting, until a supervisor's SIGKILL (this test failed so: no exit in 40 s).
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { childReport, killAndWait, killGroup, spawnSystemProcess } from '../helpers/processes';
import { until } from '../helpers/until';

const t = useTestContext({ edge: false });
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) await killAndWait(c);
});

/** Whether a Temporal worker of process `pid` polls the file's task queue (its identity is `pid@host`). */
async function polling(pid: number): Promise<boolean> {
  const { pollers } = await t.deps.temporal.workflowService.describeTaskQueue({
    namespace: t.config.temporalNamespace,
    taskQueue: { name: t.config.taskQueue },
    taskQueueType: 1, // TASK_QUEUE_TYPE_WORKFLOW
  });
  return (pollers ?? []).some((p) => (p.identity ?? '').startsWith(`${pid}@`));
}

describe('a worker stopped while its start still runs', () => {
  it('takes the SIGTERM with its own handler: it ends the start, withdraws its readiness and exits 0', async () => {
    const hold = path.join(t.dataDir, 'hold-start');
    writeFileSync(hold, '');
    const worker = spawnSystemProcess(t, 'processes/worker.ts', { VC_FAULT_INJECT: `hold-start:${hold}` });
    children.push(worker);
    await until('the worker to take tasks', () => polling(worker.pid!), { timeoutMs: 60_000, ignoreErrors: true });
    const readyRows = () => t.deps.knex('worker_heartbeats').where({ task_queue: t.config.taskQueue }).count();
    expect(Number((await readyRows())[0].count)).toBe(0); // not yet ready: the start's rest is held

    killGroup(worker, 'SIGTERM');
    await new Promise((r) => setTimeout(r, 1_000));
    // still finishing its start (the signal's default action would have ended it at once)
    expect(worker.exitCode, childReport(worker)).toBeNull();
    expect(worker.signalCode, childReport(worker)).toBeNull();

    const exited = new Promise((r) => worker.once('exit', r));
    rmSync(hold);
    await until('the worker to exit', () => worker.exitCode !== null || worker.signalCode !== null, {
      timeoutMs: 40_000,
      detail: () => childReport(worker),
    });
    await exited;
    expect(worker.exitCode, childReport(worker)).toBe(0);
    // it finished its start (announced) and withdrew it on the way out: no row says a stopped worker is ready
    expect(Number((await readyRows())[0].count)).toBe(0);
  }, 120_000);
});
