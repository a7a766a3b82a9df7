/**
 * `service backup ...` against the real stack (API, worker, a postgresql service, a local destination):
 * a person's session takes a backup, lists it, downloads it decrypted to a dump the real pg_restore reads;
 * a token is sent to `service login`; `service api` streams the snapshot's bytes to a file.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, waitForTask } from '../helpers/deploy-fixtures';
import { createAccessToken, PASSWORD, sessionAgent } from '../helpers/fixtures';
import { cliHome, ROOT, runCli } from '../helpers/cli';
import { storeCliSession } from '../helpers/cli-session';
import { dropServiceDatabase } from '../../host/pg-server';

const t = useTestContext({ worker: true, edge: false, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
vi.setConfig({ testTimeout: 120_000 });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let home: Record<string, string>;
let token: string;
let destinationId: string;
let label: string;

beforeAll(async () => {
  w = await createDeployWorld(t);
  const owner = await sessionAgent(t, w.owner);
  // local destinations as the operator allows them (BACKUP_LOCAL_ROOTS): under the test run's directory
  t.deps.config.backupLocalRoots = [join(t.dataDir, '..')];
  const dir = join(t.dataDir, '..', `dest-${w.environment.id}`);
  mkdirSync(dir);
  destinationId = (
    await owner.post(`/teams/${w.team.id}/backup-destinations`, { kind: 'local', name: 'disk', path: dir })
  ).body.id;
  const created = await owner.post(`/environments/${w.environment.id}/services`, { kind: 'postgresql', plan: 'small' });
  expect(created.status, created.text).toBe(202);
  expect((await waitForTask(t, owner, created.body.id, { timeoutMs: 90_000 })).status).toBe('succeeded');
  home = cliHome(t);
  await storeCliSession(t, w.owner, home);
  token = await createAccessToken(t, w.owner, w.team);
  label = `${w.project.name}/${w.environment.name}`;
}, 150_000);

afterAll(async () => {
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows) await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name });
});

describe('service backup', () => {
  it('create --wait, list --json, download --decrypt to a dump pg_restore reads', async () => {
    const created = await runCli(t, ['backup', 'create', label, '--destination', destinationId, '--wait'], home);
    expect(created.code, created.stderr).toBe(0);

    const list = await runCli(t, ['--json', 'backup', 'list', label], home);
    expect(list.code, list.stderr).toBe(0);
    const snapshots = JSON.parse(list.stdout).data;
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]).toMatchObject({ status: 'available', destination_id: destinationId });

    const file = join(t.dataDir, 'restored.dump');
    const dl = await runCli(t, ['backup', 'download', label, snapshots[0].id, '--decrypt', '--out', file], home);
    expect(dl.code, dl.stderr).toBe(0);
    expect(existsSync(`${file}.files.tar`)).toBe(true);
    expect(execFileSync('pg_restore', ['--list', file], { encoding: 'utf8' })).toMatch(/Archive created at/);

    // Without --decrypt: the encrypted file, which scripts/decrypt-backup.mjs (same decryption code) opens.
    const vcb = join(t.dataDir, 'snapshot.vcb');
    expect((await runCli(t, ['backup', 'download', label, snapshots[0].id, '--out', vcb], home)).code).toBe(0);
    const key = (await (await sessionAgent(t, w.owner)).post(`/environments/${w.environment.id}/backup-key`, {})).body
      .key;
    const plain = join(t.dataDir, 'plain');
    execFileSync('node', [join(ROOT, 'scripts/decrypt-backup.mjs'), '--key', key, '--in', vcb, '--out', plain]);
    expect(readFileSync(join(plain, 'database.dump'))).toEqual(readFileSync(file));

    // `service api` asks for the link, then streams the snapshot's bytes to a file (not decoded as text)
    const link = await runCli(
      t,
      ['api', `/environments/{env}/backups/${snapshots[0].id}/download`, '-X', 'POST', '--env', label],
      home,
    );
    expect(link.code, link.stderr).toBe(0);
    const url = JSON.parse(link.stdout).url as string;
    const viaApi = join(t.dataDir, 'via-api.vcb');
    const bin = join(ROOT, 'cli/bin.mjs');
    const streamed = await runCli(t, [], home, {
      command: ['sh', '-c', `"${process.execPath}" "${bin}" api "$0" > "${viaApi}"`, url],
    });
    expect(streamed.code, streamed.stderr).toBe(0);
    expect(readFileSync(viaApi).equals(readFileSync(vcb))).toBe(true);
  });

  it('a token is refused with exit 4 naming `service login`', async () => {
    const res = await runCli(t, ['backup', 'list', label], { ...home, VC_TOKEN: token });
    expect(res.code).toBe(4);
    expect(res.stderr).toContain('service login');
    expect(res.stderr).not.toContain('    at ');
  });

  it('--decrypt after an old sign-in exits 4 telling to sign in again, and writes nothing', async () => {
    const snapshot = (await t.deps.knex('backups').first('id')).id;
    await t.deps
      .knex('sessions')
      .where({ kind: 'cli' })
      .update({ authenticated_at: new Date(Date.now() - 86_400_000) });
    const file = join(t.dataDir, 'stale.dump');
    const res = await runCli(t, ['backup', 'download', label, snapshot, '--decrypt', '--out', file], home);
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(/recent sign-in: run `service login` again/);
    expect(existsSync(file)).toBe(false);
  });
});

describe('service backup restore and verify', () => {
  const restores = async () => Number((await t.deps.knex('tasks').where({ type: 'restore' }).count({ n: '*' }))[0].n);
  let snapshot: string;
  beforeAll(async () => {
    // a recent sign-in (the test above aged it), as a protected environment's restore needs
    await t.deps.knex('sessions').where({ kind: 'cli' }).update({ authenticated_at: new Date() });
    await t.deps.knex('environments').where({ id: w.environment.id }).update({ protected: true });
    snapshot = (await t.deps.knex('backups').where({ status: 'available' }).first('id')).id;
  });

  it('asks for the password over a protected environment, and a wrong one restores nothing (exit 4)', async () => {
    const n = await restores();
    const res = await runCli(t, ['backup', 'restore', label, snapshot], home, { input: 'not the password\n' });
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(/Password \(production is protected\): /);
    expect(res.stderr).toMatch(/needs your password and a sign-in younger than an hour/);
    expect(await restores()).toBe(n);
  });

  it('restores SNAPSHOT --wait with the password read from stdin (exit 0)', async () => {
    const res = await runCli(t, ['backup', 'restore', label, snapshot, '--wait'], home, { input: `${PASSWORD}\n` });
    expect(res.code, res.stderr).toBe(0);
    const task = await t.deps.knex('tasks').where({ type: 'restore' }).orderBy('seq', 'desc').first();
    expect(task).toMatchObject({ status: 'succeeded', environment_id: w.environment.id, account_via: 'cli' });
    expect(task.params).toEqual({ backup_id: snapshot });
    expect(res.stdout + res.stderr).not.toContain(PASSWORD);
  });

  it('with VC_TOKEN asks for no password: the API answers token_not_allowed (exit 4)', async () => {
    const n = await restores();
    const res = await runCli(t, ['backup', 'restore', label, snapshot], { ...home, VC_TOKEN: token }, { input: '' });
    expect(res.code).toBe(4);
    expect(res.stderr).not.toMatch(/Password/);
    expect(res.stderr).toMatch(/unset VC_TOKEN and run `service login`/);
    expect(await restores()).toBe(n);
  });

  it('refuses SNAPSHOT with --at, neither, and an --at that is not an ISO time, before asking anything', async () => {
    for (const args of [
      [label, snapshot, '--at', '2026-11-29T14:02:59Z'],
      [label],
      [label, '--at', 'yesterday at noon'],
    ]) {
      const res = await runCli(t, ['backup', 'restore', ...args], home, { input: '' });
      expect({ args, code: res.code }).toEqual({ args, code: 4 });
      expect(res.stderr).not.toMatch(/Password/);
    }
    const bad = await runCli(t, ['backup', 'restore', label, '--at', 'yesterday at noon'], home, { input: '' });
    expect(bad.stderr).toMatch(/--at must be an ISO time/);
  });

  it('verify --wait runs a restore drill; list shows when the snapshot was verified', async () => {
    const res = await runCli(t, ['backup', 'verify', label, snapshot, '--wait'], home);
    expect(res.code, res.stderr).toBe(0);
    const list = JSON.parse((await runCli(t, ['--json', 'backup', 'list', label], home)).stdout).data;
    const s = list.find((b: { id: string }) => b.id === snapshot);
    expect(s).toMatchObject({ verify_error: null, verified_at: expect.any(String) });
  });
});
