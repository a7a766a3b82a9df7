/**
 * Releases anywhere (issue 26 item 4) with a directory RELEASE_STORE (the default, DATA_DIR/releases): one machine
 * only. Two host agents on this machine share it: a release built on the file's host goes live on a second agent
 * (its own DATA_DIR), fetched from the directory. An agent refuses a directory store made on another machine; here
 * "another machine" is simulated by writing another machine id into the store's marker, which is what such a
 * store holds. An agent also refuses a directory no machine marked (its own DATA_DIR/releases, say).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, fetchEnvironment, runTaskOk, taskLog } from '../helpers/deploy-fixtures';
import { type SecondHost, spawnSecondHost, startSecondHost } from '../helpers/second-host';
import { createEnvironmentMachines } from '../../api/machines/service';
import { releaseDirFor } from '../../host/provider/releases';
import { machineId, STORE_MARKER } from '../../host/release-store';
import { testPortSlot } from '../helpers/test-workers';

const t = useTestContext({ worker: true });
const slot = testPortSlot();
const B = `rsd-b-${slot}`;
const hosts: SecondHost[] = [];

afterAll(async () => {
  for (const h of hosts) {
    await h.stop();
    rmSync(h.dataDir, { recursive: true, force: true });
  }
});

describe('releases in a directory RELEASE_STORE', () => {
  let w: Awaited<ReturnType<typeof createDeployWorld>>;
  let first: string;

  it("is DATA_DIR/releases by default, marked with this machine's id; a built release is put there", async () => {
    expect(t.config.releaseStore.location).toBe(path.join(t.dataDir, 'releases'));
    const marker = JSON.parse(readFileSync(path.join(t.config.releaseStore.location, STORE_MARKER), 'utf8'));
    expect(marker.machineId).toBe(readFileSync('/etc/machine-id', 'utf8').trim());
    w = await createDeployWorld(t);
    await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
    await t.deps.knex('servers').where({ environment_id: w.environment.id, role: 'web' }).update({
      host: t.config.hostName,
    });
    await runTaskOk(t, w.api, `/environments/${w.environment.id}/deploy`, {}, 90_000);
    first = (await t.deps.knex('environments').where({ id: w.environment.id }).first()).live_release_id;
    const archive = readFileSync(path.join(t.config.releaseStore.location, w.environment.id, `${first}.tar.gz`));
    const row = await t.deps.knex('releases').where({ id: first }).first();
    expect(row.archive_sha256).toBe(createHash('sha256').update(archive).digest('hex'));
  }, 120_000);

  it('a second agent on this machine starts a release it did not build, fetched into its DATA_DIR', async () => {
    // the other block of the slot: the s3 file's agent runs the same environment ports
    const b = await startSecondHost(t, B, {}, 1);
    hosts.push(b);
    await t.deps.knex('servers').where({ environment_id: w.environment.id, role: 'web' }).update({ host: B });
    const task = await runTaskOk(t, w.api, `/environments/${w.environment.id}/redeploy`, {}, 90_000);
    const log = await taskLog(t, w.api, task.id);
    expect(log).toContain(`==> Release ${first} fetched from the release store`);
    expect(log).not.toContain('Checking out');
    expect(existsSync(path.join(releaseDirFor(b.dataDir, w.environment.id, first), '.vc-release.json'))).toBe(true);
    expect(existsSync(path.join(b.dataDir, 'environments', w.environment.id, 'current.json'))).toBe(true);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
  }, 240_000);

  it('an agent refuses a directory store made on another machine (simulated: its marker names another machine id)', async () => {
    const store = mkdtempSync(path.join(inject('runDir'), 'store-'));
    const other = 'f'.repeat(32);
    expect(other).not.toBe(machineId());
    writeFileSync(path.join(store, STORE_MARKER), JSON.stringify({ machineId: other }));
    const agent = spawnSecondHost(t, `rsd-x-${slot}`, { RELEASE_STORE: store });
    hosts.push(agent);
    expect(await agent.exit).toBe(1);
    expect(agent.output()).toContain(`RELEASE_STORE ${store} is a directory made on another machine`);
    expect(agent.output()).toContain('RELEASE_STORE=s3://bucket/prefix');
    // nothing was started: the host never registered
    expect(
      await t.deps
        .knex('hosts')
        .where({ name: `rsd-x-${slot}` })
        .first(),
    ).toBeUndefined();
    rmSync(store, { recursive: true, force: true });
  }, 60_000);

  it('an agent refuses a directory no machine marked as a store (as its own DATA_DIR/releases would be)', async () => {
    const store = mkdtempSync(path.join(inject('runDir'), 'store-'));
    const agent = spawnSecondHost(t, `rsd-y-${slot}`, { RELEASE_STORE: store });
    hosts.push(agent);
    expect(await agent.exit).toBe(1);
    expect(agent.output()).toContain(`RELEASE_STORE ${store} is not a release store made on this machine`);
    expect(existsSync(path.join(store, STORE_MARKER))).toBe(false);
    rmSync(store, { recursive: true, force: true });
  }, 60_000);
});
