/**
 * Deploy tests' world: a real git repository of a tiny node web app, a team with a project connected to
 * it, an environment with its port, tokens; and a way to wait for a task's end.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, inject } from 'vitest';
import { environmentHome } from '../../host/provider/sandbox';
import { Environment } from '../../db/models/environment';
import { Task } from '../../db/models/task';
import { allRoutes } from '../../api/routes';
import { repositoriesDir, type TestContext } from './context';
import { addMember, createAccessToken, createProject, createTeam, createUser } from './fixtures';
import type { Agent, AnswerBody } from './http';

export const SERVER_JS = `
const http = require('node:http');
const fs = require('node:fs');
const version = fs.readFileSync(__dirname + '/VERSION', 'utf8').trim();
const boot = require('node:crypto').randomUUID(); // tells one start of the process from another
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  if (req.url === '/boot') return res.end(boot);
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end(version);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

/**
 * An app whose health check answers 503 while the file `hold` exists (in a directory every sandbox sees
 * read-only): whatever (re)starts its web process waits there, running. It says where its volume is (`/where`),
 * stores a file there (`/put?name=&body=`) and reads it back (`/get?name=`); anything else answers `answer`.
 */
export const heldVolumeApp = (hold: string, answer = 'ok') => `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const vol = process.env.VC_VOLUME_PATH;
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  try {
    if (u.pathname === '/healthz') { res.writeHead(fs.existsSync(${JSON.stringify(hold)}) ? 503 : 200); return res.end(); }
    if (u.pathname === '/where') return res.end(String(vol));
    if (u.pathname === '/put') { fs.writeFileSync(path.join(vol, u.searchParams.get('name')), u.searchParams.get('body')); return res.end('stored'); }
    if (u.pathname === '/get') return res.end(fs.readFileSync(path.join(vol, u.searchParams.get('name')), 'utf8'));
    res.end(${JSON.stringify(answer)});
  } catch (e) { res.writeHead(500); res.end(String(e.message)); }
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

export interface AppRepo {
  dir: string;
  /**
   * The environment's HOME on this host (set by createDeployWorld): the one place outside its release trees
   * where its sandboxed steps may write, and whose files they can read.
   */
  home: string;
  /** Where the deploy step appends one line per run: `$HOME/deploy-steps.log` of the environment. */
  readonly marker: string;
  /**
   * A build step waits for this file while `gated` (see commit), in every environment of the repository:
   * it lies in the tests' SANDBOX_SHARED_DIRS, which every sandbox sees read-only.
   */
  gate: string;
  commit(version: string, opts?: { buildSteps?: string[]; gated?: boolean }): string;
  /** Lines in the marker file: how many times deploy steps ran. */
  deployRuns(): number;
}

function sh(cwd: string, cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8' }).trim();
}

/**
 * A git repository (branch main) whose commits are versions of the app. Its gate lies in `gateDir`, which
 * the sandboxes must see (createDeployWorld: a directory of the tests' SANDBOX_SHARED_DIRS).
 */
export function createAppRepo(root: string, gateDir = root): AppRepo {
  const dir = path.join(root, 'app');
  mkdirSync(dir, { recursive: true });
  sh(root, 'git', ['init', '-q', '-b', 'main', dir]);
  const gate = path.join(gateDir, 'gate');
  const repo: AppRepo = {
    dir,
    home: path.join(root, 'home'),
    gate,
    get marker() {
      return path.join(repo.home, 'deploy-steps.log');
    },
    commit(version, opts = {}) {
      // the deploy step writes to $HOME (expanded in the sandbox), the one place it may write besides its tree
      const build = [
        ...(opts.gated ? [`while [ ! -f '${gate}' ]; do sleep 0.1; done`] : []),
        'echo built > BUILT',
        ...(opts.buildSteps ?? []),
      ];
      const manifest = [
        `build: ${JSON.stringify(build)}`,
        `deploy: ${JSON.stringify([`echo ${version} >> "$HOME/deploy-steps.log"`])}`,
        'web: node server.js',
        'health: /healthz',
        '',
      ].join('\n');
      writeFileSync(path.join(dir, 'server.js'), SERVER_JS);
      writeFileSync(path.join(dir, 'VERSION'), `${version}\n`);
      writeFileSync(path.join(dir, 'service.yaml'), manifest);
      return commitAll(dir, version);
    },
    deployRuns() {
      return existsSync(repo.marker) ? readFileSync(repo.marker, 'utf8').split('\n').filter(Boolean).length : 0;
    },
  };
  return repo;
}

/**
 * An app repository under the tests' repositories directory, its gate in a directory of their
 * SANDBOX_SHARED_DIRS (one of its own, which the sandboxes may traverse).
 */
export function createSharedAppRepo(): AppRepo {
  const root = mkdtempSync(path.join(repositoriesDir(), 'repo-'));
  const gateDir = mkdtempSync(path.join(inject('runDir'), 'shared', 'gate-'));
  chmodSync(gateDir, 0o755);
  return createAppRepo(root, gateDir);
}

/** Commits everything in the repository `dir` (an empty commit when nothing changed); its sha. */
export function commitAll(dir: string, message: string): string {
  // one spawn for the three (each spawn forks this test process, a large one: docs/benchmarks.md)
  return sh(dir, 'sh', [
    '-ec',
    'git add -A; git -c user.name=t -c user.email=t@example.com commit -qm "$1" --allow-empty; git rev-parse HEAD',
    'sh',
    message,
  ]);
}

/**
 * Commits `server` as the app's server.js, served with `web: node server.js` and no health check (ready once its
 * port takes connections), the rest of the repository as it is; its sha.
 */
export function commitWebApp(dir: string, server: string, message: string): string {
  writeFileSync(path.join(dir, 'server.js'), server);
  writeFileSync(path.join(dir, 'service.yaml'), 'web: node server.js\n');
  return commitAll(dir, message);
}

/** An app that answers, so it goes live, then exits with code 5 after 0.7 s, and so does every restart. */
export const EXITS_AFTER_A_MOMENT =
  "require('http').createServer((q, s) => s.end('briefly')).listen(process.env.PORT, '0.0.0.0');\n" +
  "setTimeout(() => { console.error('lost the database'); process.exit(5); }, 700);\n";

/** Commits `serverJs` as the app's server.js, the rest of the repository as it is (a test's own app). */
export function commitServer(repo: AppRepo, serverJs: string, message: string): void {
  writeFileSync(path.join(repo.dir, 'server.js'), serverJs);
  sh(repo.dir, 'git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', message]);
}

/**
 * Environments made so far, per file (its config): each file's first one takes the lowest port of its range, also
 * when a vitest worker runs several files in one process.
 */
const portCounters = new WeakMap<object, number>();

export async function createEnvironment(
  t: TestContext,
  project: { id: string; team_id: string },
  attrs: Partial<{ name: string; git_ref: string }> = {},
) {
  const { from, to } = t.config.environmentPorts;
  const size = to - from + 1;
  const made = portCounters.get(t.config) ?? 0;
  portCounters.set(t.config, made + 1);
  // The next port of the range that no environment of the file's database holds (the API's own and those of a
  // range that wrapped around included). With 3 workers a range holds 180 ports (test-workers.ts).
  const taken = new Set<number>(
    (await t.deps.knex('environments').whereBetween('port', [from, to]).pluck('port')).map(Number),
  );
  const offset = Array.from({ length: size }, (_, i) => (made + i) % size).find((i) => !taken.has(from + i));
  if (offset === undefined) throw new Error(`every port of the file's range ${from}-${to} is held by an environment`);
  const port = from + offset;
  return Environment.query(t.deps.knex).insertAndFetch({
    team_id: project.team_id,
    project_id: project.id,
    name: attrs.name ?? `env-${made + 1}`,
    git_ref: attrs.git_ref ?? 'main',
    port,
  });
}

/** A team whose project is connected to a fresh app repository, one environment, and tokens by role. */
export async function createDeployWorld(t: TestContext, opts: { gatedFirstCommit?: boolean } = {}) {
  const repo = createSharedAppRepo();
  const root = path.dirname(repo.dir);
  repo.commit('v1', { gated: opts.gatedFirstCommit });
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team, { repository_url: repo.dir });
  const environment = await createEnvironment(t, project, { name: 'production' });
  // The sandbox takes this directory over (owner, mode) when the environment's first step runs.
  repo.home = environmentHome(t.dataDir, environment.id);
  mkdirSync(repo.home, { recursive: true });
  const developer = await createUser(t);
  await addMember(t, team, developer, 'developer');
  const viewer = await createUser(t);
  await addMember(t, team, viewer, 'viewer');
  const api = t.agent().withBearer(await createAccessToken(t, developer, team));
  const viewerApi = t.agent().withBearer(await createAccessToken(t, viewer, team));
  return { root, repo, owner, team, project, environment, developer, api, viewerApi };
}

const hasTaskRoute = () => allRoutes().some((r) => r.method === 'get' && r.path === '/tasks/{id}');

/** The task as GET /tasks/{id} shows it (or its row, while that route does not exist). */
export async function getTask(
  t: TestContext,
  api: Agent,
  id: string,
): Promise<{
  id: string;
  status: string;
  error: string | null;
  result: AnswerBody;
  started_at: string | null;
  type: string;
}> {
  if (hasTaskRoute()) {
    const res = await api.get(`/tasks/${id}`);
    if (res.status !== 200) throw new Error(`GET /tasks/${id} answered ${res.status}: ${res.text}`);
    return res.body;
  }
  const row = await Task.query(t.deps.knex).findById(id);
  if (!row) throw new Error(`no task ${id}`);
  return { ...row, started_at: row.started_at ? row.started_at.toISOString() : null } as never;
}

/** Polls until the task ends (or `until` holds); fails after the deadline. */
export async function waitForTask(
  t: TestContext,
  api: Agent,
  id: string,
  opts: { timeoutMs?: number; until?: (task: Awaited<ReturnType<typeof getTask>>) => boolean } = {},
) {
  const until = opts.until ?? ((task) => ['succeeded', 'failed', 'cancelled'].includes(task.status));
  const deadline = Date.now() + (opts.timeoutMs ?? 45_000);
  for (;;) {
    const task = await getTask(t, api, id);
    if (until(task)) return task;
    if (Date.now() > deadline) throw new Error(`task ${id} still ${task.status} after the deadline`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** POSTs `path` as `api`, expects a 202 and its task to succeed (else fails with the task's error and log). */
export async function runTaskOk(t: TestContext, api: Agent, path: string, body: unknown, timeoutMs: number) {
  const res = await api.post(path, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, api, res.body.id, { timeoutMs });
  expect(task.status, `${task.error ?? ''}\n${await taskLog(t, api, task.id)}`).toBe('succeeded');
  return task;
}

/** The task's log as GET /tasks/{id}/log shows it (or its rows, while that route does not exist). */
export async function taskLog(t: TestContext, api: Agent, id: string): Promise<string> {
  if (allRoutes().some((r) => r.method === 'get' && r.path === '/tasks/{id}/log')) {
    const res = await api.get(`/tasks/${id}/log`);
    return res.text;
  }
  const rows = await t.deps.knex('task_logs').where({ task_id: id }).orderBy('seq');
  return rows.map((r: { chunk: string }) => r.chunk).join('');
}

/** What the environment's public port answers on `/`. */
export async function fetchEnvironment(port: number, p = '/'): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, text: (await res.text()).trim() };
}
