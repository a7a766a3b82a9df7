import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext } from '../../helpers/context';
import { commitAll, taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { processAlive } from '../../../host/provider/run-step';
import { sandboxedProcess } from '../../helpers/processes';
import { until } from '../../helpers/until';

/**
 * Scale through the API, a real worker and the real edge: N web processes of the live release, each its own
 * sandboxed process answering its slot (VC_INSTANCE) and pid; requests through the edge spread over them, the
 * `vc_instance` cookie keeps a client on one, a killed instance is skipped, a resize at 2 instances never
 * drops a request, a deploy starts N instances of the new release, and scaling back stops the extra ones.
 */
const t = useTestContext({ worker: true, env: { SCALE_MAX: '3' } });

const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const version = fs.readFileSync('VERSION', 'utf8').trim();
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify({ instance: process.env.VC_INSTANCE, pid: process.pid, version, memory: process.env.VC_MEMORY_MB }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

function sh(cwd: string, cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8' }).trim();
}

function createRepo(root: string) {
  const dir = path.join(root, 'app');
  mkdirSync(dir, { recursive: true });
  sh(root, 'git', ['init', '-q', '-b', 'main', dir]);
  return {
    dir,
    commit(version: string) {
      writeFileSync(path.join(dir, 'server.js'), SERVER);
      writeFileSync(path.join(dir, 'VERSION'), `${version}\n`);
      writeFileSync(path.join(dir, 'service.yaml'), 'build: []\nweb: node server.js\nhealth: /healthz\n');
      commitAll(dir, version);
    },
  };
}

interface Answer {
  status: number;
  instance?: string;
  pid?: number;
  version?: string;
  memory?: string;
  cookie?: string;
  /** why a request got no answer (status 0) */
  error?: string;
}

let owner: Agent;
let developer: Agent;
let repo: ReturnType<typeof createRepo>;
let env: { id: string; url: string };
let serverId: string;

const envPort = () => Number(new URL(env.url).port);

/**
 * One request through the edge (the environment's public port) on a connection of its own (no keep-alive):
 * what is measured is what the scale, the resize or the deploy does to requests. A reload of the edge (the
 * stickiness switch before) closes idle kept-alive client connections, which a client that does not resend
 * on a closed kept-alive connection would count as a failure (docs/edge.md).
 */
function hit(cookie?: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.get(
      { host: '127.0.0.1', port: envPort(), path: '/', agent: false, headers: cookie ? { cookie } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('error', (err) => resolve({ status: 0, error: err.message }));
        res.on('end', () => {
          const set = res.headers['set-cookie']?.join(', ');
          if (res.statusCode !== 200) return resolve({ status: res.statusCode ?? 0, cookie: set });
          resolve({ status: 200, ...(JSON.parse(body) as object), cookie: set });
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: 0, error: err.code ?? err.message }));
  });
}

async function instancesSeen(n: number, cookie?: string): Promise<Map<string, Answer>> {
  const seen = new Map<string, Answer>();
  for (let i = 0; i < n; i++) {
    const a = await hit(cookie);
    expect(a.status).toBe(200);
    seen.set(a.instance!, a);
  }
  return seen;
}

async function runTask(agent: Agent, p: string, body?: unknown) {
  const res = await agent.post(p, body);
  expect(res.status, res.text).toBe(202);
  return waitForTask(t, agent, res.body.id, { timeoutMs: 120_000 });
}

/** Requests through the edge, one after another, while `during` runs; every answer must be a 200. */
async function continuously<T>(during: () => Promise<T>): Promise<{ result: T; failures: Answer[]; answered: number }> {
  const failures: Answer[] = [];
  let answered = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const a = await hit();
      if (a.status === 200) answered++;
      else failures.push(a);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  try {
    const result = await during();
    return { result, failures, answered };
  } finally {
    polling = false;
    await poller;
  }
}

/** The host pid of the instance that gave `a` (each instance has its own pid namespace: its slot tells them apart). */
const hostPid = (a: Answer) => sandboxedProcess(env.id, 'web', a.pid!, { VC_INSTANCE: a.instance! })?.pid ?? -1;

beforeAll(async () => {
  repo = createRepo(mkdtempSync(path.join(repositoriesDir(), 'scale-')));
  repo.commit('v1');
  const user = await createUser(t);
  const team = await createTeam(t, user);
  const project = await createProject(t, team, { repository_url: repo.dir });
  owner = await sessionAgent(t, user);
  const dev = await createUser(t);
  await addMember(t, team, dev, 'developer');
  developer = await sessionAgent(t, dev);
  const created = await owner.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
  expect(created.status, created.text).toBe(201);
  env = created.body;
  serverId = (await owner.get('/servers')).body.data[0].id;
  const deploy = await runTask(owner, `/environments/${env.id}/deploy`);
  expect(deploy.status, deploy.error ?? '').toBe('succeeded');
});

describe('GET /environments/{id}/scale', () => {
  it('shows one instance, the most there may be (SCALE_MAX) and what each count costs', async () => {
    const res = await owner.get(`/environments/${env.id}/scale`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      instances: 1,
      max: 3,
      plan: 'small',
      currency: 'EUR',
      choices: [
        { instances: 2, monthly_price: 16, monthly_price_delta: 8 },
        { instances: 3, monthly_price: 24, monthly_price_delta: 16 },
      ],
    });
  });
});

describe('POST /environments/{id}/scale refusals', () => {
  it('0, beyond max, the current count, not a number, or an unknown field: 422 naming it, and no task', async () => {
    for (const body of [
      { instances: 0 },
      { instances: 4 },
      { instances: 1 },
      { instances: 'two' },
      { instances: 1.5 },
    ]) {
      const res = await owner.post(`/environments/${env.id}/scale`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['instances']);
    }
    const extra = await owner.post(`/environments/${env.id}/scale`, { instances: 2, size: 'big' });
    expect(extra.status).toBe(422);
    expect((await developer.post(`/environments/${env.id}/scale`, { instances: 2 })).status).toBe(403);
    expect(Number((await t.deps.knex('tasks').where({ type: 'scale' }).count('* as n').first())!.n)).toBe(0);
    expect((await owner.get(`/environments/${env.id}/scale`)).body.instances).toBe(1);
  });
});

describe('scaling to 2', () => {
  it('starts a second healthy instance without a failed request; the edge spreads requests over both', async () => {
    const { result: task, failures } = await continuously(() =>
      runTask(owner, `/environments/${env.id}/scale`, { instances: 2 }),
    );
    expect(task).toMatchObject({ status: 'succeeded', type: 'scale', kind: 'machines', environment_id: env.id });
    expect(failures).toEqual([]);
    const seen = await instancesSeen(12);
    expect([...seen.keys()].sort()).toEqual(['1', '2']);
    const pids = [...seen.values()].map((a) => hostPid(a));
    expect(new Set(pids).size).toBe(2);
    for (const pid of pids) expect(processAlive(pid)).toBe(true);
    expect((await owner.get(`/environments/${env.id}/scale`)).body).toMatchObject({ instances: 2, max: 3 });
    expect((await owner.get('/servers')).body.data[0]).toMatchObject({
      instances: 2,
      plan: 'small',
      monthly_price: 16,
    });
    const route = await t.deps.knex('edge_routes').where({ environment_id: env.id }).first();
    expect(route.upstreams.map((u: { id: string }) => u.id)).toEqual(['1', '2']);
    expect(await taskLog(t, owner, task.id)).toContain('==> production-web runs 2 instances');
  });

  it('a change while the scale runs is refused with 409 task_in_progress naming it', async () => {
    const first = await owner.post(`/environments/${env.id}/scale`, { instances: 3 });
    expect(first.status, first.text).toBe(202);
    const second = await owner.post(`/servers/${serverId}/resize`, { plan: 'medium' });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'task_in_progress', task_id: first.body.id });
    const done = await waitForTask(t, owner, first.body.id, { timeoutMs: 120_000 });
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect([...(await instancesSeen(15)).keys()].sort()).toEqual(['1', '2', '3']);
    const back = await runTask(owner, `/environments/${env.id}/scale`, { instances: 2 });
    expect(back.status, back.error ?? '').toBe('succeeded');
    expect([...(await instancesSeen(10)).keys()].sort()).toEqual(['1', '2']);
  });
});

describe('stickiness', () => {
  it('with stickiness the vc_instance cookie keeps a client on one instance; without the cookie, another may answer', async () => {
    const patched = await owner.patch(`/environments/${env.id}/edge`, { stickiness: true });
    expect(patched.status).toBe(200);
    let first: Answer = { status: 0 };
    await until('a vc_instance cookie', async () => {
      first = await hit();
      return first.cookie?.startsWith('vc_instance=');
    });
    const cookie = first.cookie!.split(';')[0];
    const sticky = await instancesSeen(10, cookie);
    expect([...sticky.keys()]).toEqual([first.instance]);
    // the cookie's instance answers; the edge does not set the cookie again
    expect((await hit(cookie)).cookie).toBeUndefined();
    // a client without the cookie is balanced and gets a cookie for the instance that answered
    const others = new Map<string, string>();
    for (let i = 0; i < 6; i++) {
      const a = await hit();
      others.set(a.instance!, a.cookie!.split(';')[0]);
    }
    expect([...others.keys()].sort()).toEqual(['1', '2']);
    const otherInstance = first.instance === '1' ? '2' : '1';
    expect([...(await instancesSeen(5, others.get(otherInstance))).keys()]).toEqual([otherInstance]);
  });

  it('a killed instance is skipped: the edge keeps answering, a client stuck to it is moved to the other', async () => {
    const cookies = new Map<string, string>();
    for (let i = 0; i < 6; i++) {
      const a = await hit();
      cookies.set(a.instance!, a.cookie!.split(';')[0]);
    }
    const victim = (await instancesSeen(1, cookies.get('2'))).get('2')!;
    const pid = hostPid(victim);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    await until('the killed instance to be gone', () => !processAlive(pid), 5000);
    // at once (the supervisor restarts it after 500 ms): instance 2 refuses the connection, and HAProxy sends
    // its client to instance 1 (option redispatch), whose cookie it sets
    const moved = await hit(cookies.get('2'));
    expect(moved.status).toBe(200);
    expect(moved.instance).toBe('1');
    expect(moved.cookie?.split(';')[0]).toBe(cookies.get('1'));
    const after: Answer[] = [];
    for (let i = 0; i < 10; i++) after.push(await hit());
    expect(after.map((a) => a.status)).toEqual(Array(10).fill(200));
    // the supervisor brings the instance back; the cookie finds it again
    await until(
      'instance 2 back behind its cookie',
      async () => (await hit(cookies.get('2'))).instance === '2',
      30_000,
    );
    await owner.patch(`/environments/${env.id}/edge`, { stickiness: false });
  });
});

describe('restarts and deploys at 2 instances', () => {
  it('a resize restarts the instances one at a time: continuous requests through it, zero failures', async () => {
    const before = [...(await instancesSeen(10)).values()].map((a) => hostPid(a));
    expect(before).toHaveLength(2);
    const {
      result: task,
      failures,
      answered,
    } = await continuously(() => runTask(owner, `/servers/${serverId}/resize`, { plan: 'medium' }));
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(10);
    const after = await instancesSeen(10);
    expect([...after.keys()].sort()).toEqual(['1', '2']);
    for (const a of after.values()) expect(a.memory).toBe('1024');
    // the last old instance drains, then stops after the task succeeded: the task records old_stopped then
    await until(
      'the resize to record old_stopped',
      async () => (await owner.get(`/tasks/${task.id}`)).body.phases as { name: string }[],
      (phases) => phases.some((p) => p.name === 'old_stopped'),
      30_000,
    );
    for (const pid of before) expect(processAlive(pid)).toBe(false);
    expect((await owner.get('/servers')).body.data[0]).toMatchObject({
      plan: 'medium',
      instances: 2,
      monthly_price: 32,
    });
    const log = await taskLog(t, owner, task.id);
    expect(log).toContain('Instance 1 of 2 serves');
    expect(log).toContain('Instance 2 of 2 serves');
  });

  it('a deploy starts 2 instances of the new release', async () => {
    repo.commit('v2');
    const task = await runTask(owner, `/environments/${env.id}/deploy`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    const seen = await instancesSeen(10);
    expect([...seen.keys()].sort()).toEqual(['1', '2']);
    for (const a of seen.values()) expect(a).toMatchObject({ version: 'v2', memory: '1024' });
  });
});

describe('scaling back to 1', () => {
  it('the extra instance leaves the edge, then stops; no request fails', async () => {
    const before = await instancesSeen(10);
    const second = hostPid(before.get('2')!);
    const { result: task, failures } = await continuously(() =>
      runTask(owner, `/environments/${env.id}/scale`, { instances: 1 }),
    );
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(failures).toEqual([]);
    expect([...(await instancesSeen(8)).keys()]).toEqual(['1']);
    // it drains, then stops after the task succeeded: the task records old_stopped once it is gone
    await until(
      'the scale to record old_stopped',
      async () => (await owner.get(`/tasks/${task.id}`)).body.phases as { name: string }[],
      (phases) => phases.some((p) => p.name === 'old_stopped'),
      30_000,
    );
    expect(processAlive(second)).toBe(false);
    expect((await owner.get(`/environments/${env.id}/scale`)).body.instances).toBe(1);
    expect((await owner.get('/servers')).body.data[0]).toMatchObject({ instances: 1, monthly_price: 16 });
    const route = await t.deps.knex('edge_routes').where({ environment_id: env.id }).first();
    expect(route.upstreams).toHaveLength(1);
  });
});
