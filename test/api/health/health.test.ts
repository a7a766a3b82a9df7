import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { killAndWait, spawnSystemProcess, stopChildren } from '../../helpers/processes';
import { until } from '../../helpers/until';

// no host registered by the file: the worker's own registration is what /health counts
const t = useTestContext({ host: false });
const children: ChildProcess[] = [];
afterAll(() => stopChildren(children));

const healthUntil = (check: (body: { components: { worker: { status: string } }; settings: unknown }) => boolean) =>
  until(
    'GET /health to hold',
    () => t.agent().get('/health'),
    (res) => check(res.body),
    60_000,
  );

describe('GET /health', () => {
  it('reports each component: no worker running is degraded (200), a ready worker makes it ok, a stopped one is gone', async () => {
    const before = await t.agent().get('/health');
    expect(before.status).toBe(200);
    expect(before.body).toEqual({
      status: 'degraded',
      components: {
        database: { status: 'ok' },
        temporal: { status: 'ok' },
        worker: { status: 'unavailable', ready: 0, seen_at: null },
      },
      hosts: { ready: 0, draining: 0, drained: 0, lost: 0 },
      settings: null,
      processes: null,
    });

    const worker = spawnSystemProcess(t, 'processes/worker.ts');
    children.push(worker);
    // the settings' check is bounded (CHECK_TIMEOUT_MS): on a loaded machine one answer may have timed it out (null)
    const ready = await healthUntil((b) => b.components.worker.status === 'ok' && b.settings !== null);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', components: { worker: { status: 'ok', ready: 1 } } });
    // the worker registered its machine's host (CONTRACT "Hosts"): counts by status, nothing more
    expect(ready.body.hosts).toEqual({ ready: 1, draining: 0, drained: 0, lost: 0 });
    // what the worker found about the host's settings at its start
    expect(ready.body.settings).toEqual({
      storage: { status: 'ok', reason: null, change: null },
      services: { status: 'ok', reason: null, change: null },
    });
    const row = await t.deps.knex('worker_heartbeats').first();
    expect(row.identity).toMatch(new RegExp(`:${worker.pid}$`));

    // A clean stop removes the worker's row at once.
    await killAndWait(worker, 'SIGTERM');
    const after = await t.agent().get('/health');
    expect(after.body).toMatchObject({
      status: 'degraded',
      components: { worker: { status: 'unavailable', ready: 0 } },
    });
  });

  it('counts a worker that died without stopping as gone once its row is stale', async () => {
    await t.deps
      .knex('worker_heartbeats')
      .insert({ identity: 'elsewhere:1', task_queue: 'q', seen_at: new Date(Date.now() - 60_000) });
    const res = await t.agent().get('/health');
    expect(res.body.components.worker).toEqual({ status: 'unavailable', ready: 0, seen_at: null });
    await t.deps.knex('worker_heartbeats').where({ identity: 'elsewhere:1' }).update({ seen_at: new Date() });
    expect((await t.agent().get('/health')).body.components.worker).toMatchObject({ status: 'ok', ready: 1 });
    await t.deps.knex('worker_heartbeats').where({ identity: 'elsewhere:1' }).delete();
  });

  it("reports the host's settings as the worker found them: a storage root others cannot traverse, and what to change", async () => {
    const locked = mkdtempSync(path.join(inject('runDir'), 'locked-'));
    chmodSync(locked, 0o700);
    const worker = spawnSystemProcess(t, 'processes/worker.ts', {
      STORAGE_ROOTS: `${path.join(t.dataDir, 'storage')},${path.join(locked, 'disks')}`,
    });
    children.push(worker);
    const ready = await healthUntil((b) => b.components.worker.status === 'ok' && b.settings !== null);
    expect(ready.body.settings.services.status).toBe('ok');
    expect(ready.body.settings.storage).toEqual({
      status: 'problem',
      reason: expect.stringContaining(`${locked} (mode 700) does not let other users through`),
      change: `chmod o+x ${locked}, or set STORAGE_ROOTS to a directory every user can traverse to`,
    });
    await killAndWait(worker, 'SIGTERM');
  });
});
