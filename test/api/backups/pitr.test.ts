/**
 * Point-in-time recovery through an `npm start` that runs its own services server (SERVICES_PGDATA under its
 * DATA_DIR, no SERVICES_DATABASE_URL), WAL switches forced with pg_switch_wal() instead of waiting for
 * archive_timeout: the archive, the recovery window, the restore to a second, the console's form. PITR_REPOSITORY
 * is s3://pitr/archive on an s3rver of the test's own over https (S3_* settings, S3_CA_FILE), so the archive and
 * every restore go through S3 as npm start's own processes reach it (the default directory repository, DATA_DIR/pitr,
 * is archived to in test/system/embedded-postgres.test.ts). One `npm start` is shared by the cases, in order.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { axeViolations, openConsoleAs } from '../../helpers/console-browser';
import { useTestContext } from '../../helpers/context';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { Agent } from '../../helpers/http';
import { freePort } from '../../helpers/ports';
import { startHttpsS3 } from '../../helpers/s3';
import {
  type NpmStartPorts,
  npmStartDataDir,
  npmStartEnv,
  npmStartPorts,
  spawnNpmStart,
  stopNpmStart,
  untilRunning,
} from '../../helpers/npm-start';
import { until as untilHolds } from '../../helpers/until';
import { processesMentioning } from '../../helpers/processes';
import { createHash } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';

// npm start runs on this file's database: its worker registers the host (the file registers none of its own)
const t = useTestContext({ host: false });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

let start: ChildProcess;
let out = '';
let dataDir: string;
let repository: string;
let s3: Awaited<ReturnType<typeof startHttpsS3>>;
let ports: NpmStartPorts;
let servicesPort: number;
let api: Agent;
let roots: [string, string];
let user: Awaited<ReturnType<typeof createUser>>;
let projectRow: Awaited<ReturnType<typeof createProject>>;
const envs: Array<{ id: string; database?: string }> = [];

const until = <T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 120_000,
  intervalMs = 100,
) => untilHolds(what, fn, { timeoutMs: ms, intervalMs, ignoreErrors: true, detail: () => out.slice(-4000) });

/** A session on the started API: the context's session cookies and CSRF token. */
async function startedApi(user: Awaited<ReturnType<typeof createUser>>): Promise<Agent> {
  const session = await sessionAgent(t, user);
  const agent = new Agent(`http://127.0.0.1:${ports.api}/api/vc/v1`);
  for (const [k, v] of session.cookies) agent.cookies.set(k, v);
  agent.csrf = session.csrf;
  return agent;
}

async function waitForTask(id: string, ms = 240_000) {
  return until(
    `task ${id} to end`,
    async () => {
      const r = await api.get(`/tasks/${id}`);
      return r.status === 200 && ['succeeded', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
    },
    ms,
  );
}

async function taskLog(id: string): Promise<string> {
  return (await api.get(`/tasks/${id}/log`)).text;
}

/** A superuser session on the services server npm start runs (its generated password under DATA_DIR/secrets). */
async function services<T>(database: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const password = readFileSync(path.join(dataDir, 'secrets', 'services-postgres-password'), 'utf8').trim();
  const c = new pg.Client({ host: '127.0.0.1', port: servicesPort, user: 'postgres', password, database });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  dataDir = npmStartDataDir(t);
  repository = mkdtempSync(path.join(inject('runDir'), 'pitr-repo-'));
  s3 = await startHttpsS3(repository, ['pitr']);
  ports = await npmStartPorts();
  servicesPort = await freePort();
  const owner = await createUser(t);
  user = owner;
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  projectRow = project;
  for (const name of ['staging', 'other']) envs.push({ id: (await createEnvironment(t, project, { name })).id });
  roots = [path.join(repository, 'first'), path.join(repository, 'second')];
  for (const r of roots) mkdirSync(r, { mode: 0o755 });
  const env = await npmStartEnv(t, ports, dataDir, {
    SERVICES_DATABASE_URL: '',
    SERVICES_PGDATA: path.join(dataDir, 'services-pgdata'),
    SERVICES_PORT: String(servicesPort),
    PITR_REPOSITORY: 's3://pitr/archive',
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    S3_CA_FILE: s3.caFile,
    STORAGE_ROOTS: roots.join(','),
    // this worker ensures the system schedules, the archive's among them
    REMINDER_SCHEDULE: 'on',
  });
  start = spawnNpmStart(env, (text) => {
    out += text;
  });
  await untilRunning(start, () => out);
  api = await startedApi(owner);
}, 300_000);

afterAll(async () => {
  await stopNpmStart(start, dataDir);
  await s3?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(repository, { recursive: true, force: true });
}, 120_000);

describe('the services server npm start runs', () => {
  it('is initdb’d under SERVICES_PGDATA, supervised, with a private 0700 socket directory of the cluster owner', async () => {
    expect(out).toContain("The services server's WAL is archived to");
    const health = await fetch(`http://127.0.0.1:${ports.api}/api/vc/v1/health`).then((r) => r.json());
    expect(health.processes.map((p: { name: string }) => p.name)).toContain('services-postgres');
    const pgdata = statSync(path.join(dataDir, 'services-pgdata'));
    const socket = statSync(path.join(dataDir, 'services-socket'));
    expect(socket.mode & 0o777).toBe(0o700);
    expect(socket.uid).toBe(pgdata.uid);
    expect(readdirSync(path.join(dataDir, 'services-socket'))).toContain(`.s.PGSQL.${servicesPort}`);
    const settings = await services('postgres', async (c) =>
      Object.fromEntries(
        (
          await c.query(
            "SELECT name, setting FROM pg_settings WHERE name IN ('archive_mode', 'archive_command', 'archive_timeout')",
          )
        ).rows.map((r) => [r.name, r.setting]),
      ),
    );
    expect(settings.archive_mode).toBe('on');
    expect(settings.archive_timeout).toBe('60');
    expect(settings.archive_command).toMatch(/^pgbackrest --config=.* --stanza=services archive-push %p$/);
  });

  it('archives into PITR_REPOSITORY (the S3 bucket), encrypted, lz4; the passphrase is in no file but its sealed one', async () => {
    await services('postgres', (c) => c.query('SELECT pg_catalog.pg_switch_wal()'));
    const archived = () => repositoryKeys('archive/services/');
    const segments = await until('a WAL segment in the repository', () => {
      const files = archived().filter((f) => /[0-9A-F]{24}-[0-9a-f]{40}\.lz4$/.test(f));
      return files.length > 0 && files;
    });
    expect(segments.length).toBeGreaterThan(0);
    expect(existsSync(path.join(dataDir, 'pitr'))).toBe(false);
    const conf = readFileSync(path.join(dataDir, 'pitr-run', 'pgbackrest.conf'), 'utf8');
    expect(conf).toContain('repo1-cipher-type=aes-256-cbc');
    expect(conf).toContain('compress-type=lz4');
    expect(conf).toContain('archive-async=y');
    expect(conf).not.toMatch(/cipher-pass/);
    const sealed = readFileSync(path.join(dataDir, 'secrets', 'pitr-passphrase.sealed'), 'utf8');
    expect(sealed).toMatch(/^v1\./);
    expect(statSync(path.join(dataDir, 'secrets', 'pitr-passphrase.sealed')).mode & 0o777).toBe(0o600);
    // archive.info is encrypted (OpenSSL's salted format), no plain "[db]" section in it
    const info = s3.read('pitr', 'archive/archive/services/archive.info');
    expect(info.subarray(0, 8).toString('latin1')).toBe('Salted__');
    expect(info.toString('latin1')).not.toContain('[db]');
  });

  it('creates database services and takes an incremental backup after each; their recovery windows open', async () => {
    for (const env of envs) {
      const res = await api.post(`/environments/${env.id}/services`, { kind: 'postgresql', plan: 'small' });
      expect(res.status, res.text).toBe(202);
      const task = await waitForTask(res.body.id);
      expect(task.status, await taskLog(task.id)).toBe('succeeded');
      expect(await taskLog(task.id)).toContain('==> Backed up');
      env.database = (await t.deps.knex('services').where({ environment_id: env.id }).first()).database_name;
    }
    const w = await api.get(`/environments/${envs[0].id}/recovery-window`);
    expect(w.status, w.text).toBe(200);
    expect(w.body.earliest).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Date.parse(w.body.latest)).toBeGreaterThanOrEqual(Date.parse(w.body.earliest));
  });
});

/** The current second, once the clock has passed into the next one (a commit made before it is before it). */
async function nextSecond(): Promise<string> {
  await pause(1100 - (Date.now() % 1000));
  return `${new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().slice(0, 19)}Z`;
}

/**
 * The archive is forced to take the WAL so far (pg_switch_wal), and the window to reach `at`. A transaction of
 * its own writes a commit record first: one query string is one transaction, whose commit would come after the
 * switch, and a switch with nothing written since the last one (a backup's) does nothing, which left the window
 * to archive_timeout's 60 s.
 */
async function archivedPast(envId: string, at: string) {
  await services('postgres', async (c) => {
    await c.query('SELECT pg_catalog.txid_current()');
    await c.query('SELECT pg_catalog.pg_switch_wal()');
  });
  // the archive pushes to S3 through pgBackRest: seconds when quiet, longer when the suite loads both cores. Each
  // ask of the window runs pgBackRest twice (info, repo-ls), so it is asked twice a second, not ten times.
  return until(
    `the recovery window to reach ${at}`,
    async () => {
      const w = await api.get(`/environments/${envId}/recovery-window`);
      return w.status === 200 && Date.parse(w.body.latest) >= Date.parse(at) && w.body;
    },
    120_000,
    500,
  );
}

/** The keys of the repository's objects under `under` (relative to it), in the bucket. */
const repositoryKeys = (under: string) =>
  s3
    .objects('pitr')
    .filter((k) => k.startsWith(`archive/${under}`))
    .map((k) => k.slice(`archive/${under}`.length));

const rows = (db: string, table = 'public.r') =>
  services(db, async (c) => (await c.query(`SELECT t FROM ${table} ORDER BY t`)).rows.map((r) => r.t as string));

const scratchDir = () => path.join(dataDir, 'pitr-run', 'scratch');

describe('the archive schedules', () => {
  it('are pitr-full (weekly) and pitr-diff (daily), and a run takes a backup of the archive', async () => {
    const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
    try {
      const client = new Client({ connection });
      const full = await until('the pitr-full schedule', () =>
        client.schedule
          .getHandle('pitr-full')
          .describe()
          .catch(() => undefined),
      );
      expect(JSON.stringify(full.spec.calendars)).toContain('SUNDAY');
      expect(JSON.stringify(full.spec.calendars)).not.toContain('MONDAY');
      const diff = client.schedule.getHandle('pitr-diff');
      const backups = () =>
        [...new Set(repositoryKeys('backup/services/').map((k) => k.split('/')[0]))].filter((f) => /D$/.test(f));
      const before = backups().length;
      await diff.trigger();
      await until('a differential backup in the repository', () => backups().length > before, 180_000);
    } finally {
      await connection.close();
    }
  }, 240_000);
});

describe('the recovery window', () => {
  it('is 409 pitr_unavailable, with its reason, where the console does not run the services server', async () => {
    // the context's own API: its services server is SERVICES_DATABASE_URL, which the console does not run
    const env = await createEnvironment(t, projectRow, { name: 'elsewhere' });
    const owner = await sessionAgent(t, user);
    const none = await owner.get(`/environments/${env.id}/recovery-window`);
    expect(none.status, none.text).toBe(409);
    expect(none.body.error.code).toBe('no_database_service');
    await t.deps.knex('services').insert({
      team_id: env.team_id,
      project_id: env.project_id,
      environment_id: env.id,
      kind: 'postgresql',
      version: '15',
      plan: 'small',
      status: 'available',
      database_name: 'svc_elsewhere',
      role_name: 'svc_elsewhere',
      password_sealed: 'x',
    });
    const res = await owner.get(`/environments/${env.id}/recovery-window`);
    expect(res.status, res.text).toBe(409);
    expect(res.body.error.code).toBe('pitr_unavailable');
    expect(res.body.error.reason).toMatch(/SERVICES_DATABASE_URL.*SERVICES_PGDATA/);
    const restore = await owner.post(`/environments/${env.id}/restore`, {
      point_in_time: new Date().toISOString(),
      confirm: true,
    });
    expect(restore.status, restore.text).toBe(409);
    expect(restore.body.error.code).toBe('pitr_unavailable');
    expect(await t.deps.knex('tasks').where({ environment_id: env.id })).toHaveLength(0);
  });
});

describe('POST /environments/{id}/restore', () => {
  let target: string;
  let kept: string;

  it('puts the rows of t1 and t2 back and not those of t3; another tenant is untouched; no scratch is left', async () => {
    const [db, other] = [envs[0].database!, envs[1].database!];
    for (const d of [db, other])
      await services(d, (c) => c.query(`CREATE TABLE public.r (t text); ALTER TABLE public.r OWNER TO ${d}`));
    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('t1')"));
    await services(other, (c) => c.query("INSERT INTO public.r VALUES ('other before')"));
    await pause(1100);
    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('t2')"));
    target = await nextSecond();
    await pause(1100);
    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('t3')"));
    await services(other, (c) => c.query("INSERT INTO public.r VALUES ('other after')"));
    await archivedPast(envs[0].id, target);

    // refusals first: nothing starts
    const unconfirmed = await api.post(`/environments/${envs[0].id}/restore`, { point_in_time: target });
    expect(unconfirmed.status, unconfirmed.text).toBe(422);
    expect(Object.keys(unconfirmed.body.error.fields)).toEqual(['confirm']);
    const early = await api.post(`/environments/${envs[0].id}/restore`, {
      point_in_time: '2001-01-01T00:00:00Z',
      confirm: true,
    });
    expect(early.status, early.text).toBe(422);
    expect(Object.keys(early.body.error.fields)).toEqual(['point_in_time']);
    const late = await api.post(`/environments/${envs[0].id}/restore`, {
      point_in_time: new Date(Date.now() + 3600_000).toISOString(),
      confirm: true,
    });
    expect(late.status, late.text).toBe(422);
    expect(await t.deps.knex('tasks').where({ environment_id: envs[0].id, type: 'restore' })).toHaveLength(0);

    const res = await api.post(`/environments/${envs[0].id}/restore`, { point_in_time: target, confirm: true });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ kind: 'backups', type: 'restore' });
    const task = await waitForTask(res.body.id);
    const log = await taskLog(task.id);
    expect(task.status, log).toBe('succeeded');
    expect(log).toMatch(/Restoring backup .* into a scratch directory: database svc_/);
    expect(log).toContain('the volume is left as it is');
    expect(await rows(db)).toEqual(['t1', 't2']);
    expect(await rows(other)).toEqual(['other after', 'other before']);
    kept = /kept as (svc_[a-z0-9_]+)/.exec(log)![1];
    expect(kept).toMatch(new RegExp(`^${db}_kept_\\d{14}$`));
    expect(await rows(kept)).toEqual(['t1', 't2', 't3']);
    expect(readdirSync(scratchDir())).toEqual([]);
    expect(processesMentioning(scratchDir())).toEqual([]);
    // the new database is in a backup: the window starts again after the restore
    const w = await api.get(`/environments/${envs[0].id}/recovery-window`);
    expect(w.status, w.text).toBe(200);
    expect(Date.parse(w.body.earliest)).toBeGreaterThan(Date.parse(target));
  }, 400_000);

  // At the real heartbeat timeout (the `long` profile's 15 s; this npm start sets no ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS):
  // the file's one wait on it, and the one test of a killed restore's replay through npm start.
  it('finishes a restore whose worker was killed mid-way on the next worker; the app never sees a half-restored database', async () => {
    const db = envs[1].database!;
    const before = await nextSecond();
    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('later')"));
    await archivedPast(envs[1].id, before);
    const res = await api.post(`/environments/${envs[1].id}/restore`, { point_in_time: before, confirm: true });
    expect(res.status, res.text).toBe(202);
    await until('the replay to start', async () => (await taskLog(res.body.id)).includes('into a scratch directory'));
    const worker = Number(readFileSync(path.join(dataDir, 'run', 'worker.pid'), 'utf8'));
    process.kill(worker, 'SIGKILL');
    // meanwhile, the live database is the whole old one, never a part
    expect(await rows(db)).toEqual(['later', 'other after', 'other before']);
    const task = await waitForTask(res.body.id, 400_000);
    expect(task.status, await taskLog(task.id)).toBe('succeeded');
    expect(await rows(db)).toEqual(['other after', 'other before']);
    expect(readdirSync(scratchDir())).toEqual([]);
    expect(processesMentioning(scratchDir())).toEqual([]);
  }, 500_000);

  it('after a storage move, a second before it is outside the window; a restore after it never writes the live tablespace', async () => {
    const db = envs[0].database!;
    const beforeMove = await nextSecond();
    await archivedPast(envs[0].id, beforeMove);
    const move = await api.post(`/environments/${envs[0].id}/storage/database/move`, { location: roots[1] });
    expect(move.status, move.text).toBe(202);
    const moved = await waitForTask(move.body.id);
    expect(moved.status, await taskLog(moved.id)).toBe('succeeded');
    const refused = await api.post(`/environments/${envs[0].id}/restore`, { point_in_time: beforeMove, confirm: true });
    expect(refused.status, refused.text).toBe(422);
    expect(Object.keys(refused.body.error.fields)).toEqual(['point_in_time']);

    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('t4')"));
    const afterMove = await nextSecond();
    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('t5')"));
    await archivedPast(envs[0].id, afterMove);
    await services('postgres', (c) => c.query('CHECKPOINT'));
    const digest = () => {
      const files: Record<string, string> = {};
      for (const f of readdirSync(path.join(roots[1], 'database'), { recursive: true }).map(String)) {
        const full = path.join(roots[1], 'database', f);
        if (statSync(full).isFile()) files[f] = createHash('sha256').update(readFileSync(full)).digest('hex');
      }
      return files;
    };
    const live = digest();
    expect(Object.keys(live).length).toBeGreaterThan(0);
    const res = await api.post(`/environments/${envs[0].id}/restore`, { point_in_time: afterMove, confirm: true });
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(res.body.id);
    expect(task.status, await taskLog(task.id)).toBe('succeeded');
    expect(await rows(db)).toEqual(['t1', 't2', 't4']);
    const after = digest();
    for (const [f, h] of Object.entries(live)) expect(after[f], f).toBe(h);
  }, 500_000);
});

// The console's "Restore to a point in time" on this npm start (the one services server here with PITR): the form
// filled in a browser with a second inside the window, the task followed to its end, the rows of that second back.
describe('the Backups screen’s point-in-time form', () => {
  it('restores to the second picked in the browser; a second outside the window shows the API’s refusal on the field', async () => {
    const env = envs[1];
    const db = env.database!;
    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('console before')"));
    const target = await nextSecond();
    await services(db, (c) => c.query("INSERT INTO public.r VALUES ('console after')"));
    const window = await archivedPast(env.id, target);
    expect(Date.parse(window.earliest)).toBeLessThanOrEqual(Date.parse(target));

    const restores = () => t.deps.knex('tasks').where({ environment_id: env.id, type: 'restore' });
    const earlier = (await restores()).length;
    const c = await openConsoleAs({ ...t, baseUrl: `http://127.0.0.1:${ports.api}` }, api);
    try {
      const { page } = c;
      // a loaded machine (the slowest files run side by side): each wait below may take more than Playwright's 30 s
      page.setDefaultTimeout(120_000);
      await c.go(`/environments/${env.id}/backups`);
      const section = page.getByRole('region', { name: 'Restore to a point in time' });
      const field = section.locator('input[name="point_in_time"]');
      // should the form not come, the failure says what the section shows instead (the window's refusal, or still
      // loading): a CI run under load once waited out the timeout here with nothing to tell
      await field.waitFor().catch(async (err: Error) => {
        const shown = await section.textContent({ timeout: 5000 }).catch(() => 'no section');
        throw new Error(`${err.message}\nThe section shows: ${shown}`);
      });
      // the browser's own time zone decides the datetime-local value; the form shows what it sends in UTC
      const local = (iso: string) =>
        page.evaluate((at) => {
          const d = new Date(at);
          const p = (n: number) => String(n).padStart(2, '0');
          return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
        }, iso);
      // the window's start as a person reads it: in the browser's zone, with its UTC beside it only when they differ
      // (it read "16:47:24 (2026-12-02 16:47:24Z UTC)" in a browser on UTC)
      const earliest = (await api.get(`/environments/${env.id}/recovery-window`)).body.earliest as string;
      const utc = earliest.replace('T', ' ').replace(/Z$/, '');
      const there = (await local(earliest)).replace('T', ' ');
      await section.getByText(`from ${there === utc ? `${utc} UTC` : `${there} (${utc} UTC)`} to`).waitFor();

      // outside the window: the API's 422 on point_in_time beside the field, no task
      const early = '2001-01-01T00:00:00Z';
      const refused = await api.post(`/environments/${env.id}/restore`, { point_in_time: early, confirm: true });
      expect(refused.status, refused.text).toBe(422);
      await field.fill(await local(early));
      expect(await section.locator('[data-utc]').textContent()).toBe(early);
      await section.getByLabel('I understand the database is replaced by its past self').check();
      await section.getByRole('button', { name: 'Restore to this second' }).click();
      const error = section.locator('.field .field-error');
      await error.waitFor();
      expect(await error.textContent()).toBe(refused.body.error.fields.point_in_time);
      expect(await field.getAttribute('aria-invalid')).toBe('true');
      expect(await axeViolations(page, 'environment-backups-pitr-form')).toEqual([]);
      await c.screenshot('environment-backups-pitr-refused');
      expect(await restores()).toHaveLength(earlier);

      // inside the window: the task, followed on its page to its end
      await field.fill(await local(target));
      expect(await section.locator('[data-utc]').textContent()).toBe(target);
      await section.getByRole('button', { name: 'Restore to this second' }).click();
      await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
      const id = page.url().split('/').pop()!;
      expect(await t.deps.knex('tasks').where({ id }).first()).toMatchObject({
        environment_id: env.id,
        type: 'restore',
      });
      await page.locator('[data-status="succeeded"]').waitFor({ timeout: 240_000 });
      expect(await rows(db)).toEqual(['console before', 'other after', 'other before']);
      expect(c.problems).toEqual([]);
    } finally {
      await c.close();
    }
  }, 400_000);
});
