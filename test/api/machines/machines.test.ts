import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext } from '../../helpers/context';
import { commitAll, taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { processAlive } from '../../../host/provider/run-step';
import { cgroupSubtree } from '../../../host/provider/host-identity';
import { sandboxedProcess } from '../../helpers/processes';
import { until } from '../../helpers/until';

/**
 * Machines through the API and a real worker: the web server every environment gets, its plan held on the
 * real web process (cgroup limits, VC_CPU/VC_MEMORY_MB), resize and reboot as tasks, build machines, and the
 * resource series the worker's sampler feeds (RESOURCE_SAMPLE_SECONDS=1 here).
 */
const t = useTestContext({ worker: true, env: { RESOURCE_SAMPLE_SECONDS: '1' } });

const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const held = [];
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  if (req.url.startsWith('/hog/')) {
    const mb = Number(req.url.slice(5));
    for (let i = 0; i < mb; i++) held.push(Buffer.alloc(1 << 20, 1));
    res.writeHead(200); return res.end('survived');
  }
  const cg = fs.readFileSync('/proc/self/cgroup', 'utf8').split('\\n').find((l) => /:memory:/.test(l)) || '';
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ pid: process.pid, cpu: process.env.VC_CPU, memory: process.env.VC_MEMORY_MB, cgroup: cg.split(':')[2] }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

function sh(cwd: string, cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8' }).trim();
}

/** A repository whose build step prints the plan and cgroup it runs in. */
function createRepo(root: string): { dir: string; commit(version: string): void } {
  const dir = path.join(root, 'app');
  mkdirSync(dir, { recursive: true });
  sh(root, 'git', ['init', '-q', '-b', 'main', dir]);
  return {
    dir,
    commit(version) {
      writeFileSync(path.join(dir, 'server.js'), SERVER);
      writeFileSync(path.join(dir, 'VERSION'), `${version}\n`);
      writeFileSync(
        path.join(dir, 'service.yaml'),
        [
          `build: ${JSON.stringify(['echo "build plan: $VC_CPU CPU $VC_MEMORY_MB MB"', 'grep memory /proc/self/cgroup; sleep 0.2; echo "in $(grep memory /proc/self/cgroup)"'])}`,
          `deploy: ${JSON.stringify(['echo "deploy plan: $VC_CPU CPU $VC_MEMORY_MB MB"'])}`,
          'web: node server.js',
          'health: /healthz',
          '',
        ].join('\n'),
      );
      commitAll(dir, version);
    },
  };
}

let owner: Agent;
let developer: Agent;
let otherOwner: Agent;
let repo: ReturnType<typeof createRepo>;
let teamId: string;
let env: { id: string; url: string; name: string };
let server: { id: string };

const envPort = () => Number(new URL(env.url).port);
/** What the web process says of itself (through the public port), and its host pid (it has its own pid namespace). */
const info = async () => {
  const me = (await (await fetch(`http://127.0.0.1:${envPort()}/`)).json()) as {
    pid: number;
    cpu: string;
    memory: string;
    cgroup: string;
  };
  return { ...me, hostPid: sandboxedProcess(env.id, 'web', me.pid)?.pid ?? -1 };
};

async function runTask(agent: Agent, p: string, body?: unknown) {
  const res = await agent.post(p, body);
  expect(res.status, res.text).toBe(202);
  return waitForTask(t, agent, res.body.id, { timeoutMs: 90_000 });
}

beforeAll(async () => {
  repo = createRepo(mkdtempSync(path.join(repositoriesDir(), 'machines-')));
  repo.commit('v1');
  const user = await createUser(t);
  const team = await createTeam(t, user);
  teamId = team.id;
  const project = await createProject(t, team, { repository_url: repo.dir });
  owner = await sessionAgent(t, user);
  const dev = await createUser(t);
  await addMember(t, team, dev, 'developer');
  developer = await sessionAgent(t, dev);
  const other = await createUser(t);
  await createTeam(t, other);
  otherOwner = await sessionAgent(t, other);
  const created = await owner.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
  expect(created.status, created.text).toBe(201);
  env = created.body;
});

describe('GET /servers', () => {
  it('lists the web server every environment gets when it is created, priced from the price list', async () => {
    const res = await owner.get('/servers');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    server = res.body.data[0];
    expect(server).toMatchObject({
      name: 'production-web',
      team_id: teamId,
      environment_id: env.id,
      role: 'web',
      plan: 'small',
      cpu: 0.5,
      memory_mb: 512,
      disk_gb: 10,
      status: 'running',
      monthly_price: 8,
      currency: 'EUR',
    });
  });

  it('filters by team, and shows no server of a team the caller is not in', async () => {
    expect((await owner.get(`/servers?team=${teamId}`)).body.data).toHaveLength(1);
    expect((await otherOwner.get('/servers')).body.data).toEqual([]);
    expect((await otherOwner.get(`/servers?team=${teamId}`)).body.data).toEqual([]);
    const bad = await owner.get('/servers?team=nope&plan=small');
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['plan', 'team']);
  });
});

describe('the web server plan on the real web process', () => {
  it('a deploy runs the web process held to the plan and told it; deploy steps too, builds on the build plan', async () => {
    const task = await runTask(owner, `/environments/${env.id}/deploy`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    const me = await info();
    expect(me).toMatchObject({ cpu: '0.5', memory: '512' });
    expect(me.cgroup).toContain(`/${cgroupSubtree()}/${env.id}/web-`);
    const log = await taskLog(t, owner, task.id);
    expect(log).toContain('build plan: 1 CPU 1024 MB');
    expect(log).toMatch(new RegExp(`in \\d+:memory:.*/${cgroupSubtree()}/${env.id}/build-`));
    expect(log).toContain('deploy plan: 0.5 CPU 512 MB');
  });

  it('a web process that allocates past its plan is killed (and brought back by the supervisor)', async () => {
    const before = await info();
    expect(before.hostPid).toBeGreaterThan(0);
    const res = await fetch(`http://127.0.0.1:${envPort()}/hog/700`).then(
      (r) => r.status,
      () => 'connection lost',
    );
    expect(res).not.toBe(200);
    await until('the old host process to end', async () => !processAlive(before.hostPid), 5000);
    await until('the new memory limit', async () => (await info().catch(() => null))?.memory === '512');
  });
});

describe('GET /servers/{id}/resize', () => {
  it('shows the current plan and every other with its price and the monthly difference', async () => {
    const res = await owner.get(`/servers/${server.id}/resize`);
    expect(res.status).toBe(200);
    expect(res.body.plan).toBe('small');
    expect(res.body.choices.map((c: { plan: string }) => c.plan)).toEqual(['nano', 'medium', 'large', 'xlarge']);
    expect(res.body.choices[0]).toEqual({
      plan: 'nano',
      cpu: 0.25,
      memory_mb: 256,
      disk_gb: 5,
      monthly_price: 4,
      monthly_price_delta: -4,
    });
    expect(res.body.choices[1]).toMatchObject({ plan: 'medium', monthly_price: 16, monthly_price_delta: 8 });
  });

  it("answers 404 for another team's server", async () => {
    expect((await otherOwner.get(`/servers/${server.id}/resize`)).status).toBe(404);
  });
});

describe('POST /servers/{id}/resize', () => {
  it('refuses an unknown plan and the current one with 422 on plan, changing nothing', async () => {
    for (const plan of ['huge', 'small']) {
      const res = await owner.post(`/servers/${server.id}/resize`, { plan });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['plan']);
    }
    expect(Number((await t.deps.knex('tasks').where({ type: 'resize' }).count('* as n').first())!.n)).toBe(0);
  });

  it('is not for developers (403)', async () => {
    expect((await developer.post(`/servers/${server.id}/resize`, { plan: 'medium' })).status).toBe(403);
  });

  it('restarts the instance on the new plan without a failed request, then records the plan', async () => {
    await until('the instance to run', async () => (await info().catch(() => null)) !== null);
    const before = await info();
    expect(before.hostPid).toBeGreaterThan(0);
    let failures = 0;
    let answered = 0;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const ok = await fetch(`http://127.0.0.1:${envPort()}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) answered++;
        else failures++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const task = await runTask(owner, `/servers/${server.id}/resize`, { plan: 'medium' });
    polling = false;
    await poller;
    expect(task).toMatchObject({ status: 'succeeded', type: 'resize', kind: 'machines', environment_id: env.id });
    expect(failures).toBe(0);
    expect(answered).toBeGreaterThan(0);
    const after = await info();
    expect(after).toMatchObject({ cpu: '1', memory: '1024' });
    expect(after.hostPid).not.toBe(before.hostPid);
    // the old instance drains and stops after the task succeeded: its phases say when
    const phases = await until(
      'the resize to record old_stopped',
      async () => (await owner.get(`/tasks/${task.id}`)).body.phases as { name: string }[],
      (list) => list.some((p) => p.name === 'old_stopped'),
      30_000,
    );
    expect(phases.map((p) => p.name)).toEqual([
      'queued',
      'started',
      'release_ready',
      'process_started',
      'healthy',
      'edge_switched',
      'old_stopped',
    ]);
    expect(processAlive(before.hostPid)).toBe(false);
    // 700 MB did not fit in 512; it fits in 1024
    expect(await (await fetch(`http://127.0.0.1:${envPort()}/hog/700`)).text()).toBe('survived');
    const listed = (await owner.get('/servers')).body.data[0];
    expect(listed).toMatchObject({
      plan: 'medium',
      cpu: 1,
      memory_mb: 1024,
      disk_gb: 20,
      status: 'running',
      monthly_price: 16,
    });
    expect(await taskLog(t, owner, task.id)).toContain('==> production-web runs on medium');
  });

  it('a later deploy keeps the new plan', async () => {
    repo.commit('v2');
    const task = await runTask(owner, `/environments/${env.id}/deploy`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(await info()).toMatchObject({ cpu: '1', memory: '1024' });
  });
});

describe('one change at a time', () => {
  it('a resize while another runs on the environment is refused with 409 task_in_progress naming it', async () => {
    const first = await owner.post(`/servers/${server.id}/resize`, { plan: 'large' });
    expect(first.status, first.text).toBe(202);
    const second = await owner.post(`/servers/${server.id}/resize`, { plan: 'xlarge' });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'task_in_progress', task_id: first.body.id });
    const done = await waitForTask(t, owner, first.body.id, { timeoutMs: 90_000 });
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect(await info()).toMatchObject({ cpu: '2', memory: '2048' });
  });
});

describe('POST /servers/{id}/reboot', () => {
  it('replaces the instance by a healthy one on the same plan', async () => {
    const before = await info();
    expect(before.hostPid).toBeGreaterThan(0);
    const task = await runTask(owner, `/servers/${server.id}/reboot`);
    expect(task).toMatchObject({ status: 'succeeded', type: 'reboot', kind: 'machines' });
    const after = await info();
    expect(after.hostPid).not.toBe(before.hostPid);
    expect(after).toMatchObject({ cpu: '2', memory: '2048' });
  });
});

describe('build machines', () => {
  it('GET shows the provider and plan builds run on, and the providers', async () => {
    const res = await owner.get(`/environments/${env.id}/build-machines`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: 'local', plan: 'build-small', cpu: 1, memory_mb: 1024 });
    expect(res.body.providers[0]).toMatchObject({ id: 'local', plans: [{ id: 'build-small' }, { id: 'build-large' }] });
  });

  it("POST options lists one provider's plans; an unknown provider is 422", async () => {
    const ok = await owner.post(`/environments/${env.id}/build-machines/options`, { provider: 'local' });
    expect(ok.status).toBe(200);
    expect(ok.body.plans.map((p: { id: string }) => p.id)).toEqual(['build-small', 'build-large']);
    expect(ok.body.plans[1]).toMatchObject({ monthly_price: 10, monthly_price_delta: 10 });
    const bad = await owner.post(`/environments/${env.id}/build-machines/options`, { provider: 'mars' });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields)).toEqual(['provider']);
  });

  it('POST refuses an unknown plan (422 on plan) and a developer (403)', async () => {
    const bad = await owner.post(`/environments/${env.id}/build-machines`, { provider: 'local', plan: 'build-huge' });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields)).toEqual(['plan']);
    expect(
      (await developer.post(`/environments/${env.id}/build-machines`, { provider: 'local', plan: 'build-large' }))
        .status,
    ).toBe(403);
  });

  it('POST sets the plan, and the next build runs with its limits', async () => {
    const res = await owner.post(`/environments/${env.id}/build-machines`, { provider: 'local', plan: 'build-large' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: 'local', plan: 'build-large', cpu: 2, memory_mb: 4096 });
    repo.commit('v3');
    const task = await runTask(owner, `/environments/${env.id}/build`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(await taskLog(t, owner, task.id)).toContain('build plan: 2 CPU 4096 MB');
  });
});

describe('GET /environments/{id}/resources', () => {
  it('answers the series of the sampled usage: CPU, memory of the web process, bytes on disk', async () => {
    await until('a memory sample above 10 MiB', async () => {
      const r = await owner.get(`/environments/${env.id}/resources?window=1h`);
      return r.body.series?.memory.some((p: { value: number }) => p.value > 10 * 1024 * 1024);
    });
    const res = await owner.get(`/environments/${env.id}/resources?window=1h`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ window: '1h', step: 60 });
    const { cpu, memory, disk } = res.body.series;
    expect(memory.length).toBeGreaterThan(0);
    expect(memory.length).toBeLessThanOrEqual(61);
    expect(cpu.map((p: { at: string }) => p.at)).toEqual(memory.map((p: { at: string }) => p.at));
    expect(disk.at(-1).value).toBeGreaterThan(1000);
    expect(new Date(memory[0].at).getTime() % 60_000).toBe(0);
  });

  it('averages 90 days into at most 500 points of `step` seconds', async () => {
    const res = await owner.get(`/environments/${env.id}/resources?window=90d`);
    expect(res.status).toBe(200);
    expect(res.body.step).toBe(18_000);
    expect(res.body.series.cpu.length).toBeLessThanOrEqual(500);
  });

  it('refuses another window with 422 on window', async () => {
    for (const q of ['window=2h', '']) {
      const res = await owner.get(`/environments/${env.id}/resources?${q}`);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['window']);
    }
  });
});
