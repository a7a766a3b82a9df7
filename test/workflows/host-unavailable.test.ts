/**
 * Work for an environment's machine goes to its host's queue (workflows/host-queue.ts): sent to a host no agent
 * polls, it is never taken, and the task ends `failed` with `host_unavailable: ...` once HOST_LOST_SECONDS +
 * HOST_GRACE_SECONDS have passed (2 + 3 s here; the contract's 30 s of grace is checked in the work's schedule, where
 * nothing waits for it), instead of waiting for ever. The file's own host runs the same tasks, and
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
import { loadConfig } from '../../system/config';

/** The schedule-to-start timeouts (seconds) of the activities a task's workflow sent to a host's queue. */
async function hostQueueWaits(taskId: string): Promise<number[]> {
  const { workflow_id } = await t.deps.knex('tasks').where({ id: taskId }).first('workflow_id');
  const history = await t.deps.temporal.workflow.getHandle(workflow_id).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes;
    return a?.taskQueue?.name?.includes('-host-') && a.scheduleToStartTimeout
      ? [Number(String(a.scheduleToStartTimeout.seconds ?? 0))]
      : [];
  });
}

const t = useTestContext({ worker: true, env: { HOST_LOST_SECONDS: '2', HOST_GRACE_SECONDS: '3' } });
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
  it("runs on the environment's own host, through its queue, waiting HOST_LOST_SECONDS + 30 s at the real grace", async () => {
    const { server } = await environmentWithServer('here');
    expect(server.host).toBe(t.config.hostName);
    // the real value (HOST_GRACE_SECONDS unset), for this task only; the file's 3 s spare the last test its wait
    const shortened = t.deps.config.hostGraceSeconds;
    t.deps.config.hostGraceSeconds = loadConfig({}).hostGraceSeconds;
    let task: Awaited<ReturnType<typeof waitForTask>>;
    try {
      const res = await agent.post(`/servers/${server.id}/reboot`);
      expect(res.status, res.text).toBe(202);
      task = await waitForTask(t, agent, res.body.id, { timeoutMs: 30_000 }).catch(async (e) => {
        throw new Error(`${e.message}\n${await taskLog(t, agent, res.body.id)}`);
      });
    } finally {
      t.deps.config.hostGraceSeconds = shortened;
    }
    expect(task.status, `${task.error}\n${await taskLog(t, agent, task.id)}`).toBe('succeeded');
    const waits = await hostQueueWaits(task.id);
    expect(waits.length).toBeGreaterThan(0);
    expect(new Set(waits)).toEqual(new Set([2 + 30]));
  }, 90_000);

  it('fails as host_unavailable when no agent of its host takes the work', async () => {
    const { server } = await environmentWithServer('there');
    await t.deps.knex('servers').where({ id: server.id }).update({ host: 'gone-host' });
    const res = await agent.post(`/servers/${server.id}/reboot`);
    expect(res.status, res.text).toBe(202);
    // HOST_LOST_SECONDS (2) + HOST_GRACE_SECONDS (3 here) for the host to take it, then the task ends
    const task = await waitForTask(t, agent, res.body.id, { timeoutMs: 90_000 });
    expect(new Set(await hostQueueWaits(task.id))).toEqual(new Set([2 + 3]));
    expect(task.status).toBe('failed');
    expect(task.error).toMatch(/^host_unavailable: the machine this environment runs on is down/);
    expect(task.error).not.toContain('gone-host');
    expect(await taskLog(t, agent, task.id)).toContain('host_unavailable');
    // the server is not left rebooting
    expect((await t.deps.knex('servers').where({ id: server.id }).first()).status).toBe('running');
  }, 120_000);
});
