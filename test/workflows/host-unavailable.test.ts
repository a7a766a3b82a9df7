/**
 * Work for an environment's machine goes to its host's queue (workflows/host-queue.ts): sent to a host no agent
 * polls, it is never taken, and the task ends `failed` with `host_unavailable: ...` once HOST_LOST_SECONDS + 30 s
 * have passed (HOST_LOST_SECONDS is 2 here), instead of waiting for ever. The file's own host runs the same tasks, and
 * a deploy whose host is lost places the environment on it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext } from '../helpers/context';
import { createProject, createTeam, createUser, sessionAgent, insertHost } from '../helpers/fixtures';
import { createDeployWorld, fetchEnvironment, taskLog, waitForTask, commitAll } from '../helpers/deploy-fixtures';
import { createEnvironmentMachines } from '../../api/machines/service';
import type { Agent } from '../helpers/http';

const t = useTestContext({ worker: true, env: { HOST_LOST_SECONDS: '2' } });
const scratch = mkdtempSync(join(repositoriesDir(), 'vc-host-unavailable-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let agent: Agent;
let projectId: string;

beforeAll(async () => {
  const repository = join(scratch, 'repo');
  execFileSync('git', ['init', '-q', '-b', 'main', repository]);
  commitAll(repository, 'a');
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  projectId = (await createProject(t, team, { repository_url: repository })).id;
  agent = await sessionAgent(t, owner);
  // a host that registered once and has not beaten since: lost, and no worker polls its queue
  await insertHost(t, 'gone-host', { heartbeatSecondsAgo: 3600 });
});

async function environmentWithServer(name: string) {
  const res = await agent.post(`/projects/${projectId}/environments`, { name, git_ref: 'main' });
  expect(res.status, res.text).toBe(201);
  const server = await t.deps.knex('servers').where({ environment_id: res.body.id, role: 'web' }).first();
  return { id: res.body.id as string, server };
}

describe('work sent to a host', () => {
  // first: createDeployWorld takes the first port of the range for its environment
  it('a deploy whose host is lost places the environment on another host and goes live there', async () => {
    const w = await createDeployWorld(t);
    await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
    await t.deps.knex('servers').where({ environment_id: w.environment.id, role: 'web' }).update({ host: 'gone-host' });
    const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 50_000 });
    const log = await taskLog(t, w.api, task.id);
    expect(task.status, `${task.error}\n${log}`).toBe('succeeded');
    expect(log).toContain(
      '==> host_unavailable: the machine this environment ran on is down; it now runs on another machine',
    );
    // host names are the operator's: the team's log names none
    expect(log).not.toContain('gone-host');
    expect(log).not.toContain(t.config.hostName);
    const server = await t.deps.knex('servers').where({ environment_id: w.environment.id, role: 'web' }).first();
    expect(server.host).toBe(t.config.hostName);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
  }, 60_000);
  it("runs on the environment's own host, through its queue", async () => {
    const { server } = await environmentWithServer('here');
    expect(server.host).toBe(t.config.hostName);
    const res = await agent.post(`/servers/${server.id}/reboot`);
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(t, agent, res.body.id, { timeoutMs: 30_000 }).catch(async (e) => {
      throw new Error(`${e.message}\n${await taskLog(t, agent, res.body.id)}`);
    });
    expect(task.status, `${task.error}\n${await taskLog(t, agent, task.id)}`).toBe('succeeded');
  }, 90_000);

  it('fails as host_unavailable when no agent of its host takes the work', async () => {
    const { server } = await environmentWithServer('there');
    await t.deps.knex('servers').where({ id: server.id }).update({ host: 'gone-host' });
    const res = await agent.post(`/servers/${server.id}/reboot`);
    expect(res.status, res.text).toBe(202);
    // HOST_LOST_SECONDS (2) + 30 s for the host to take it, then the task ends
    const task = await waitForTask(t, agent, res.body.id, { timeoutMs: 90_000 });
    expect(task.status).toBe('failed');
    expect(task.error).toMatch(/^host_unavailable: the machine this environment runs on is down/);
    expect(task.error).not.toContain('gone-host');
    expect(await taskLog(t, agent, task.id)).toContain('host_unavailable');
    // the server is not left rebooting
    expect((await t.deps.knex('servers').where({ id: server.id }).first()).status).toBe('running');
  }, 120_000);
});
