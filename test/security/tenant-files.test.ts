import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { tenantUid } from '../../host/provider/sandbox';
import { startBackupTask } from '../../core/backups/tasks';

/**
 * Issue 16, items 2, 3 and 4: root's file operations on trees a tenant shapes. The attacker is a team owner
 * whose deployed app (its web process, in its sandbox, as its uid) runs shell commands in its own HOME and
 * volume while the worker and the API act on them:
 * - item 3: local backup destinations anywhere on the host (its own volume after a move out of DATA_DIR,
 *   `/`, `/etc`, the services cluster's data, the console's code, ...) are refused with 422 on `path`;
 * - item 2: a snapshot at a destination the tenant can change (one saved before BACKUP_LOCAL_ROOTS existed)
 *   is never served through its links: the download does not give the console's encryption key, and no
 *   further backup is written there;
 * - item 4: the registry credentials of a build are never written, chowned or chmodded through a link the
 *   running web process swaps in for their directory.
 */
const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let base: string;
let outsideRoot: string;
let legit: string;
let victim: string;
const env = () => `/environments/${w.environment.id}`;

/** The tenant's app: health, its volume's path, and any shell command run as itself in its sandbox. */
const app = (victimDir: string) => `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const home = process.env.HOME;
// Item 4: the running web process watches its HOME and swaps a fresh registry-auth directory for a link.
fs.watch(home, (ev, name) => {
  if (!name || !/^\\.vc-registry-auth-[0-9a-f]+$/.test(name)) return;
  const p = path.join(home, name);
  try {
    if (!fs.lstatSync(p).isDirectory()) return;
    fs.renameSync(p, p + '.moved');
    fs.symlinkSync(${JSON.stringify(victimDir)}, p);
    fs.appendFileSync(path.join(home, 'swapped.log'), name + '\\n');
  } catch (e) { fs.appendFileSync(path.join(home, 'swap-errors.log'), String(e) + '\\n'); }
});
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (u.pathname === '/healthz') return res.end('ok');
  if (u.pathname === '/where') return res.end(String(process.env.VC_VOLUME_PATH));
  if (u.pathname === '/sh') {
    try { return res.end(execFileSync('/bin/sh', ['-c', u.searchParams.get('cmd')], { encoding: 'utf8' })); }
    catch (e) { res.writeHead(500); return res.end(String(e.stderr || e.message)); }
  }
  res.end('app');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

/** Runs a shell command as the tenant, in its web process. */
async function asTenant(cmd: string): Promise<string> {
  const url = `http://127.0.0.1:${w.environment.port}/sh?cmd=${encodeURIComponent(cmd)}`;
  let res = await fetch(url);
  // the edge may take a moment to see a web process that was just (re)started
  for (let i = 0; i < 50 && res.status === 502; i++) {
    await new Promise((r) => setTimeout(r, 200));
    res = await fetch(url);
  }
  const text = await res.text();
  const log = join(t.dataDir, 'environments', w.environment.id, 'web.log');
  expect(res.status, `${text}\n${existsSync(log) ? readFileSync(log, 'utf8').slice(-3000) : ''}`).toBe(200);
  return text;
}

async function runTask(p: string, body: unknown = {}) {
  const res = await owner.post(p, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 180_000 });
  expect(task.status, `${task.error ?? ''}\n${await taskLog(t, owner, task.id)}`).toBe('succeeded');
  return task;
}

/** The bytes of an answer as far as they came (one that announced more than it sends ends at the timeout). */
async function received(res: Response): Promise<Buffer> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res.body ?? []) chunks.push(Buffer.from(chunk));
  } catch {
    // aborted: what came is what was served
  }
  return Buffer.concat(chunks);
}

/** The root-only destination under BACKUP_LOCAL_ROOTS (`<base>/backups/ok`), added once through the API. */
async function legitDestination(): Promise<string> {
  const row = await t.deps.knex('backup_destinations').where({ team_id: w.team.id, name: 'legit' }).first();
  if (row) return row.id;
  const res = await owner.post(`/teams/${w.team.id}/backup-destinations`, {
    kind: 'local',
    name: 'legit',
    path: join(legit, 'ok'),
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  base = mkdtempSync(join(inject('runDir'), 'tenant-files-'));
  chmodSync(base, 0o711);
  outsideRoot = join(base, 'disk2');
  legit = join(base, 'backups');
  victim = join(base, 'victim');
  for (const d of [outsideRoot, legit, victim]) mkdirSync(d, { mode: 0o755 });
  chmodSync(legit, 0o700);
  mkdirSync(join(legit, 'ok'), { mode: 0o700 });
  writeFileSync(join(victim, 'keep'), 'root-owned\n', { mode: 0o644 });
  // The operator's settings, as the API and the in-process worker read them: a second storage root outside
  // DATA_DIR, and local backup destinations allowed anywhere under the test run's directory (which holds
  // DATA_DIR, the storage roots and the services cluster too: those stay refused by their own rules).
  t.deps.config.storageRoots = [t.config.storageRoots[0], outsideRoot];
  t.deps.config.backupLocalRoots = [inject('runDir')];
  w = await createDeployWorld(t);
  writeFileSync(join(w.repo.dir, 'server.js'), app(victim));
  writeFileSync(
    join(w.repo.dir, 'service.yaml'),
    ['build: ["echo built"]', 'deploy: []', 'web: node server.js', 'health: /healthz', ''].join('\n'),
  );
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'tenant app'], {
    cwd: w.repo.dir,
  });
  owner = await sessionAgent(t, w.owner);
  await runTask(`${env()}/deploy`);
  await asTenant('echo hello > "$VC_VOLUME_PATH/note.txt"');
  // Step 1 of the attack: the files disk moves to the storage root outside DATA_DIR.
  await runTask(`${env()}/storage/files/move`, { location: outsideRoot });
  expect((await fetch(`http://127.0.0.1:${w.environment.port}/where`).then((r) => r.text())).trim()).toBe(
    join(outsideRoot, 'volumes', w.environment.id),
  );
}, 300_000);

describe('item 3: POST /teams/{id}/backup-destinations {kind: "local"}', () => {
  const add = (path: string, name = `d-${Math.random().toString(36).slice(2, 8)}`) =>
    owner.post(`/teams/${w.team.id}/backup-destinations`, { kind: 'local', name, path });

  it("refuses the tenant's own volume (inside STORAGE_ROOTS) with 422 on path, and writes nothing there", async () => {
    const volume = join(outsideRoot, 'volumes', w.environment.id);
    const before = readdirSync(volume).sort();
    const res = await add(volume);
    expect(res.status, res.text).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['path']);
    expect(res.body.error.fields.path).toMatch(/STORAGE_ROOTS/);
    expect(readdirSync(volume).sort()).toEqual(before);
    expect(await t.deps.knex('backup_destinations').where({ team_id: w.team.id })).toEqual([]);
  });

  it('refuses host directories: /, /etc, /root, the services cluster, the code, /proc/self/cwd, /dev/shm, another root', async () => {
    const paths = [
      '/',
      '/etc',
      '/root',
      join(inject('runDir'), 'services-pg'),
      process.cwd(),
      '/proc/self/cwd',
      '/dev/shm',
      join(t.config.storageRoots[0], 'volumes'),
      t.dataDir,
      join(t.dataDir, 'environments', w.environment.id, 'home'),
    ];
    for (const p of paths) {
      mkdirSync(p, { recursive: true });
      const res = await add(p);
      expect(res.status, `${p}: ${res.text}`).toBe(422);
      expect(Object.keys(res.body.error.fields), p).toEqual(['path']);
    }
    expect(await t.deps.knex('backup_destinations').where({ team_id: w.team.id })).toEqual([]);
  });

  it('refuses a directory under BACKUP_LOCAL_ROOTS that the tenant (or anyone but root) can change', async () => {
    const uid = tenantUid(w.environment.port);
    const owned = join(base, 'tenant-owned');
    mkdirSync(owned, { recursive: true });
    chownSync(owned, uid, uid);
    const below = join(owned, 'inner');
    mkdirSync(below, { recursive: true });
    const open = join(base, 'world-writable');
    mkdirSync(open, { recursive: true });
    chmodSync(open, 0o777);
    for (const p of [owned, below, open]) {
      const res = await add(p);
      expect(res.status, `${p}: ${res.text}`).toBe(422);
      expect(res.body.error.fields.path).toMatch(/only root can change/);
    }
  });

  it('accepts a root-only directory under BACKUP_LOCAL_ROOTS, outside DATA_DIR and the storage roots', async () => {
    const res = await add(join(legit, 'ok'), 'legit');
    expect(res.status, res.text).toBe(201);
    expect(res.body.last_error).toBeNull();
  });
});

describe('item 2: a snapshot at a destination the tenant can change is never served through its links', () => {
  let legacyId: string;
  let snapshotId: string;
  let volume: string;

  beforeAll(async () => {
    volume = join(outsideRoot, 'volumes', w.environment.id);
    const task = await runTask(`${env()}/backups`, { destination_id: await legitDestination() });
    const row = await t.deps.knex('backups').where({ task_id: task.id }).first();
    snapshotId = row.id;
    // What the old code accepted and wrote: a destination at the tenant's own volume holding that snapshot.
    [{ id: legacyId }] = await t.deps
      .knex('backup_destinations')
      .insert({ team_id: w.team.id, name: 'legacy', kind: 'local', settings: { path: volume } })
      .returning('id');
    mkdirSync(join(volume, w.environment.id), { mode: 0o700 });
    copyFileSync(join(legit, 'ok', row.object_key), join(volume, row.object_key));
    await t.deps.knex('backups').where({ id: snapshotId }).update({ destination_id: legacyId });
  });

  it('stays listed, with a last_error that says why its backups are refused', async () => {
    const list = (await owner.get(`/teams/${w.team.id}/backup-destinations`)).body.data;
    const legacy = list.find((d: { id: string }) => d.id === legacyId);
    expect(legacy.last_error).toMatch(/refused.*STORAGE_ROOTS/);
  });

  it("the download does not serve the console's encryption key that the tenant linked in", async () => {
    const keyFile = join(t.dataDir, 'secrets', 'encryption-key.json');
    const key = readFileSync(keyFile);
    // Steps 3 and 4, from the tenant's web process: <volume>/<env id> becomes a link to its HOME, and the
    // snapshot a link to the key.
    await asTenant(
      [
        `cd "$VC_VOLUME_PATH"`,
        `mv ${w.environment.id} ${w.environment.id}.orig`,
        `ln -s "$HOME" ${w.environment.id}`,
        `ln -sf ${keyFile} "$HOME/${snapshotId}.vcb"`,
      ].join(' && '),
    );
    const url = await owner.post(`${env()}/backups/${snapshotId}/download`, {});
    expect(url.status, url.text).toBe(200);
    const res = await fetch(url.body.url, { signal: AbortSignal.timeout(20_000) });
    const body = await received(res);
    expect(body.includes(key)).toBe(false);
    expect(body.toString()).not.toContain(JSON.parse(key.toString()).key);
    expect(res.status).toBe(409);
  });

  it('no backup is written there through the link: 422 on destination_id, its last_error kept', async () => {
    const before = readdirSync(w.repo.home).sort();
    const res = await owner.post(`${env()}/backups`, { destination_id: legacyId });
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.fields.destination_id).toMatch(/refused.*STORAGE_ROOTS/);
    expect(readdirSync(w.repo.home).sort()).toEqual(before);
    const row = await t.deps.knex('backup_destinations').where({ id: legacyId }).first();
    expect(row.last_error).toMatch(/refused/);
  });

  it("a scheduled backup there (the backup window's task) fails with that reason and writes nothing", async () => {
    const before = readdirSync(w.repo.home).sort();
    const task = await startBackupTask(t.deps, { via: 'schedule', userId: null }, w.environment, legacyId, 'scheduled');
    const done = await waitForTask(t, owner, task.id, { timeoutMs: 90_000 });
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/refused.*STORAGE_ROOTS/);
    const snapshot = await t.deps.knex('backups').where({ task_id: task.id }).first();
    expect(snapshot).toMatchObject({ status: 'failed' });
    expect(snapshot.error).toMatch(/refused/);
    expect(readdirSync(w.repo.home).sort()).toEqual(before);
  });

  it('a snapshot object replaced at its destination (other bytes, same size) is refused before a byte is served', async () => {
    const task = await runTask(`${env()}/backups`, { destination_id: await legitDestination() });
    const row = await t.deps.knex('backups').where({ task_id: task.id }).first();
    const file = join(legit, 'ok', row.object_key);
    const bytes = readFileSync(file);
    expect(sha256(bytes)).toBe(row.sha256);
    bytes[bytes.length - 1] ^= 0xff;
    writeFileSync(file, bytes);
    const url = await owner.post(`${env()}/backups/${row.id}/download`, {});
    const res = await fetch(url.body.url);
    expect(res.status).toBe(409);
    expect((await res.json()).error.message).toMatch(/SHA-256/);
  });
});

describe('item 4: registry credentials of a build, with the web process swapping their directory', () => {
  it('are never written into, chowned or chmodded at the directory the link names', async () => {
    const before = { mode: statSync(victim).mode, uid: statSync(victim).uid, entries: readdirSync(victim).sort() };
    const added = await owner.post(`/projects/${w.project.id}/registries`, {
      host: 'npm.example.test',
      username: 'ci',
      password: 'registry_pass_9d2e',
    });
    expect(added.status, added.text).toBe(201);
    execFileSync(
      'git',
      ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'v2', '--allow-empty'],
      {
        cwd: w.repo.dir,
      },
    );
    // The build either goes on (root wrote the files before the swap) or stops at the link it refuses to
    // follow (the swap came first: the tenant broke its own build); it never writes through the link.
    const started = await owner.post(`${env()}/deploy`, {});
    expect(started.status, started.text).toBe(202);
    const task = await waitForTask(t, owner, started.body.id, { timeoutMs: 180_000 });
    if (task.status !== 'succeeded')
      expect({ status: task.status, error: task.error }).toEqual({
        status: 'failed',
        error: expect.stringMatching(/ENOTDIR|ELOOP|not a directory|symbolic link/),
      });
    // the tenant did swap the directory for a link (the attack ran)
    const swapped = join(w.repo.home, 'swapped.log');
    expect(
      existsSync(swapped),
      existsSync(join(w.repo.home, 'swap-errors.log'))
        ? readFileSync(join(w.repo.home, 'swap-errors.log'), 'utf8')
        : '',
    ).toBe(true);
    const name = readFileSync(swapped, 'utf8').trim().split('\n')[0];
    expect(name).toMatch(/^\.vc-registry-auth-/);
    // ... and root wrote nothing there, nor changed its owner or mode
    expect(readdirSync(victim).sort()).toEqual(before.entries);
    expect(statSync(victim).mode).toBe(before.mode);
    expect(statSync(victim).uid).toBe(before.uid);
  });
});
