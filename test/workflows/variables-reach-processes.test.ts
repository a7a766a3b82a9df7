/**
 * Variables reach the tenant's processes, and nothing of the console does: a build step and a deploy step
 * print their whole environment, the web process answers its own; the worker runs as its own process with
 * the console's settings (database URL, Temporal address, DATA_DIR) in its environment.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext } from '../helpers/context';
import { createAccessToken, createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { createEnvironment, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { spawnSystemProcess, stopChildren } from '../helpers/processes';
import type { Agent } from '../helpers/http';

const t = useTestContext({ edge: true });
const children: ChildProcess[] = [];
const SECRET = 's3cr3t-value-7f3a9c';
let admin: Agent;
let api: Agent;
let env: { id: string; port: number };
let projectId: string;

const SERVER = `
const http = require('node:http');
http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(process.env));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

beforeAll(async () => {
  const dir = path.join(mkdtempSync(path.join(repositoriesDir(), 'repo-')), 'app');
  mkdirSync(dir);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  writeFileSync(path.join(dir, 'server.js'), SERVER);
  writeFileSync(
    path.join(dir, 'service.yaml'),
    'build: ["env | sort"]\ndeploy: ["echo deploy sees $GREETING and $API_SECRET"]\nweb: node server.js\n',
  );
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'v1');

  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team, { repository_url: dir });
  env = await createEnvironment(t, project, { name: 'production' });
  projectId = project.id;
  admin = await sessionAgent(t, owner);
  api = t.agent().withBearer(await createAccessToken(t, owner, team));
  await admin.post(`/projects/${project.id}/variables`, { name: 'GREETING', value: 'from-project' });
  await admin.post(`/projects/${project.id}/variables`, { name: 'SHARED', value: 'project-level' });
  await admin.post(`/environments/${env.id}/variables`, { name: 'GREETING', value: 'from-environment' });
  await admin.post(`/environments/${env.id}/variables`, { name: 'API_SECRET', value: SECRET, secret: true });
  await admin.post(`/projects/${project.id}/variables`, { name: 'PATH', value: '/nowhere' });
  children.push(spawnSystemProcess(t, 'processes/worker.ts'));
}, 120_000);

afterAll(() => stopChildren(children));

describe('variables in builds, deploy steps and web processes', () => {
  it('gives every process the merged set, built-ins win, secrets print as [secret], no console setting leaks', async () => {
    const res = await api.post(`/environments/${env.id}/deploy`);
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(t, api, res.body.id, { timeoutMs: 90_000 });
    expect(task.status, task.error ?? '').toBe('succeeded');
    const log = await taskLog(t, api, task.id);
    // the build step printed its whole environment
    expect(log).toContain('GREETING=from-environment');
    expect(log).toContain('SHARED=project-level');
    expect(log).toContain('API_SECRET=[secret]');
    expect(log).toContain('deploy sees from-environment and [secret]');
    expect(log).not.toContain(SECRET);
    expect(log).not.toContain('PATH=/nowhere');
    const key = t.deps.secrets.encryptionKey.key;
    for (const leak of [
      'DATABASE_URL',
      'TEMPORAL_ADDRESS',
      'DATA_DIR',
      key.toString('base64'),
      key.toString('hex'),
      t.databaseUrl,
    ]) {
      expect(log).not.toContain(leak);
    }

    const served = (await (await fetch(`http://127.0.0.1:${env.port}/`)).json()) as Record<string, string>;
    expect(served).toMatchObject({ GREETING: 'from-environment', SHARED: 'project-level', API_SECRET: SECRET });
    expect(served.PATH).not.toBe('/nowhere');
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'DATA_DIR', 'ENCRYPTION_KEY', 'TEMPORAL_TASK_QUEUE']) {
      expect(served[name], name).toBeUndefined();
    }
  });

  it('POST /environments/{id}/variables/apply restarts the web process with the current variables, without a build', async () => {
    const live = async () => {
      const r = await admin.get(`/environments/${env.id}/variables`);
      expect(r.status, r.text).toBe(200);
      return r.body.live as { applied: boolean; since: string } | null;
    };
    // the deploy above started the processes with the saved set
    const deployed = await live();
    expect(deployed).toMatchObject({ applied: true });
    await admin.post(`/environments/${env.id}/variables`, { name: 'GREETING', value: 'applied' });
    // saved, not live yet: the list says so until an apply
    expect(await live()).toEqual({ applied: false, since: deployed!.since });
    const res = await admin.post(`/environments/${env.id}/variables/apply`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ kind: 'configuration', type: 'apply_variables', environment_id: env.id });
    const task = await waitForTask(t, api, res.body.id, { timeoutMs: 60_000 });
    expect(task.status, task.error ?? '').toBe('succeeded');
    const log = await taskLog(t, api, task.id);
    expect(log).toContain('API_SECRET');
    expect(log).not.toContain(SECRET);
    expect(log).not.toContain('==> Building');
    const served = (await (await fetch(`http://127.0.0.1:${env.port}/`)).json()) as Record<string, string>;
    expect(served.GREETING).toBe('applied');
    // the task's succeeded: the very next read says the processes have the set
    const applied = await live();
    expect(applied?.applied).toBe(true);
    expect(Date.parse(applied!.since)).toBeGreaterThan(Date.parse(deployed!.since));
    // a removal is a change too, and a secret's new value (the list never shows it) as well
    await admin.post(`/environments/${env.id}/variables`, { name: 'API_SECRET', value: `${SECRET}-2`, secret: true });
    expect((await live())?.applied).toBe(false);
    await admin.post(`/environments/${env.id}/variables`, { name: 'API_SECRET', value: SECRET, secret: true });
    expect((await live())?.applied).toBe(true);
    expect((await admin.delete(`/projects/${projectId}/variables/SHARED`)).status).toBe(204);
    expect((await live())?.applied).toBe(false);
    await admin.post(`/projects/${projectId}/variables`, { name: 'SHARED', value: 'project-level' });
    expect((await live())?.applied).toBe(true);
    // the stored record is a digest, never a value
    const row = await t.deps.knex('environments').where({ id: env.id }).first('variables_live');
    expect(JSON.stringify(row.variables_live)).not.toContain(SECRET);
    expect(row.variables_live.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('POST /projects/{id}/variables/apply starts one task per environment with a live release', async () => {
    await createEnvironment(
      t,
      { id: projectId, team_id: (await t.deps.knex('projects').where({ id: projectId }).first()).team_id },
      { name: 'never-deployed' },
    );
    const res = await admin.post(`/projects/${projectId}/variables/apply`);
    expect(res.status, res.text).toBe(202);
    expect(res.body.data.map((task: { environment_id: string }) => task.environment_id)).toEqual([env.id]);
    expect((await waitForTask(t, api, res.body.data[0].id, { timeoutMs: 60_000 })).status).toBe('succeeded');
    // nothing is live there: nothing to say of what it runs with
    const never = await t.deps
      .knex('environments')
      .where({ project_id: projectId, name: 'never-deployed' })
      .first('id');
    expect((await admin.get(`/environments/${never.id}/variables`)).body.live).toBeNull();
  });
});
