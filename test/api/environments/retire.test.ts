import { existsSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { describe, expect, it, beforeAll } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, fetchEnvironment, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import { environmentDir, sandboxMode, tenantUid } from '../../../host/provider/sandbox';
import { volumePath } from '../../../db/queries/storage';
import { workflowIds } from '../../../db/workflow-names';
import { createEnvironmentMachines } from '../../../api/machines/service';
import { hostTaskQueue } from '../../../system/task-queues';

const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;

beforeAll(async () => {
  w = await createDeployWorld(t);
  // placed as the API places it: its retire goes to its host's queue (the file's host, which its worker polls)
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
  writeFileSync(w.repo.gate, '');
});

/** Process ids running as the uid on this host. */
function processesOf(uid: number): string[] {
  try {
    return execFileSync('pgrep', ['-U', String(uid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

describe('DELETE /environments/{id} takes the environment off the host', () => {
  it('stops its processes, removes its network and files, then frees its port for a new environment', async () => {
    const deploy = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(deploy.status, deploy.text).toBe(202);
    expect((await waitForTask(t, w.api, deploy.body.id)).status).toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
    const port = w.environment.port;
    const sandboxed = sandboxMode(() => undefined).mode !== 'none';
    if (sandboxed) expect(processesOf(tenantUid(port)).length).toBeGreaterThan(0);
    const envDir = environmentDir(t.dataDir, w.environment.id);
    expect(existsSync(envDir)).toBe(true);
    const volume = volumePath(t.config.storageRoots[0], w.environment.id);
    expect(existsSync(volume)).toBe(true);

    const owner = await sessionAgent(t, w.owner);
    const res = await owner.delete(`/environments/${w.environment.id}`);
    expect(res.status, res.text).toBe(204);
    // Held while the sandbox is still there.
    const held = await t.deps.knex('retiring_ports').where({ environment_id: w.environment.id }).first();
    expect(held?.port ?? port).toBe(port);

    const retire = t.deps.temporal.workflow.getHandle(workflowIds.environmentRetire(w.environment.id));
    await retire.result();
    // on the queue of the host the environment was placed on
    const scheduled = (await retire.fetchHistory()).events?.flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.taskQueue?.name] : [],
    );
    expect(scheduled).toEqual([hostTaskQueue(t.config.taskQueue, t.config.hostName)]);
    expect(await t.deps.knex('retiring_ports').where({ port })).toEqual([]);
    expect(processesOf(tenantUid(port))).toEqual([]);
    expect(existsSync(envDir)).toBe(false);
    expect(existsSync(volume)).toBe(false);
    if (sandboxMode(() => undefined).mode === 'namespaces') expect(existsSync(`/run/netns/vc-${port}`)).toBe(false);
    // Nothing answers there any more (the edge has no route: refused or its own error page).
    const after = await fetchEnvironment(port).catch((err: Error) => ({ status: 0, text: err.message }));
    expect(after).not.toEqual({ status: 200, text: 'v1' });
    expect(await t.deps.knex('edge_routes').where({ environment_id: w.environment.id })).toEqual([]);

    // Retired: the port is the lowest free one again and a new environment gets it.
    const again = await owner.post(`/projects/${w.project.id}/environments`, { name: 'again', git_ref: 'main' });
    expect(again.status, again.text).toBe(201);
    expect(Number(new URL(again.body.url).port)).toBe(port);
  });

  it('does not give a retiring port to a new environment', async () => {
    const { from } = t.config.environmentPorts;
    const taken = await t.deps.knex('environments').pluck('port');
    const free = Array.from({ length: 300 }, (_, i) => from + i).filter((p) => !taken.includes(p));
    await t.deps.knex('retiring_ports').insert({ port: free[0], environment_id: w.environment.id });
    const owner = await sessionAgent(t, w.owner);
    const res = await owner.post(`/projects/${w.project.id}/environments`, { name: 'staging', git_ref: 'main' });
    expect(res.status, res.text).toBe(201);
    const created = await t.deps.knex('environments').where({ id: res.body.id }).first();
    expect(created.port).toBe(free[1]);
  });
});
