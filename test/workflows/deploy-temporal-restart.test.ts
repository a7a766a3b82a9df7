import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTemporalDevServer, type DevServer } from '../../processes/temporal';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, fetchEnvironment, waitForTask } from '../helpers/deploy-fixtures';
import { freePort } from '../helpers/ports';
// @ts-expect-error plain JS module shared with scripts/bootstrap.mjs
import { findTemporalCli } from '../../scripts/temporal-cli.mjs';

// This file's own Temporal dev server (persisted to SQLite), so that it can be stopped and started again.
const env: Record<string, string> = {};
let server: DevServer;
let serverOpts: Parameters<typeof startTemporalDevServer>[0];

beforeAll(async () => {
  const cliPath = process.env.TEMPORAL_CLI ?? findTemporalCli();
  if (!cliPath) throw new Error('no Temporal CLI (set TEMPORAL_CLI)');
  serverOpts = {
    cliPath,
    dataDir: mkdtempSync(path.join(tmpdir(), 'vc-temporal-')),
    port: await freePort(),
    namespace: 'default',
    headless: true,
  };
  server = await startTemporalDevServer(serverOpts);
  env.TEMPORAL_ADDRESS = server.address;
});

const t = useTestContext({ worker: true, env });
let w: Awaited<ReturnType<typeof createDeployWorld>>;

beforeAll(async () => {
  w = await createDeployWorld(t, { gatedFirstCommit: true });
  rmSync(w.repo.gate, { force: true });
});

afterAll(async () => {
  await server?.stop();
  rmSync(serverOpts.dataDir, { recursive: true, force: true });
});

describe('the Temporal server restarted while a deploy runs', () => {
  it('completes the running task once the server is back', async () => {
    const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(res.status).toBe(202);
    await waitForTask(t, w.api, res.body.id, { until: (x) => x.status === 'running' });

    await server.stop();
    server = await startTemporalDevServer(serverOpts);
    writeFileSync(w.repo.gate, '');

    const done = await waitForTask(t, w.api, res.body.id, { timeoutMs: 60_000 });
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
    const handle = t.deps.temporal.workflow.getHandle(`env-change-${w.environment.id}`);
    expect(await handle.result()).toMatchObject({ status: 'succeeded' });
    expect(await t.deps.knex('deployments').where({ task_id: res.body.id })).toHaveLength(1);
  });
});
