import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { startReceiver, type Receiver } from '../../helpers/receiver';
import { dropServiceDatabase, serviceUrl } from '../../../host/pg-server';
import { scratchExists, scratchName } from '../../../host/pg-scratch';
import { serviceLogin } from '../../../activities/data/service-env';
import { environmentVolume } from '../../../db/queries/storage';
import { ensureRestoreDrillSchedule } from '../../../core/schedules';
import { startS3 } from '../../helpers/s3';

/**
 * Restore drills through the real stack (API, worker, Temporal, the services server, a local destination, a
 * webhook receiver): a backup records its tables' row counts and its files; a drill restores the snapshot
 * into scratch, compares, and removes its scratch; a snapshot corrupted at its destination fails its drill,
 * which the snapshot, the activity and the team's webhook say.
 */
const t = useTestContext({ worker: true, edge: false, smtp: true, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let destinationDir: string;
let destinationId: string;
let receiver: Receiver;
let hook: Webhook;
let volumeEntries: number;
const env = () => `/environments/${w.environment.id}`;

async function runTask(path: string, body: unknown, outcome = 'succeeded') {
  const res = await owner.post(path, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 120_000 });
  expect(task.status, task.error ?? '').toBe(outcome);
  return task as typeof task & { result: Record<string, unknown> | null };
}

async function sql(text: string) {
  const login = await serviceLogin(t.deps, w.environment.id);
  const c = new pg.Client({ connectionString: serviceUrl(t.config, login!) });
  await c.connect();
  try {
    return (await c.query(text)).rows;
  } finally {
    await c.end();
  }
}

const snapshot = async (id: string) =>
  (await owner.get(`${env()}/backups`)).body.data.find((b: { id: string }) => b.id === id);

async function backUp(): Promise<string> {
  const task = await runTask(`${env()}/backups`, { destination_id: destinationId });
  return task.result!.backup_id as string;
}

/** Nothing a drill made is left: no scratch database or role, no scratch directory. */
async function expectNoScratch(taskId: string) {
  expect(await scratchExists(t.config, scratchName(taskId))).toBe(false);
  expect(readdirSync(join(t.dataDir, 'drills'))).toEqual([]);
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  owner = await sessionAgent(t, w.owner);
  t.deps.config.backupLocalRoots = [join(t.dataDir, '..')];
  destinationDir = join(t.dataDir, '..', `drills-${w.environment.id}`);
  mkdirSync(destinationDir);
  destinationId = (
    await owner.post(`/teams/${w.team.id}/backup-destinations`, { kind: 'local', name: 'disk', path: destinationDir })
  ).body.id;
  expect(destinationId).toBeTruthy();
  receiver = await startReceiver();
  const integration = await owner.post(`/teams/${w.team.id}/integrations`, {
    kind: 'webhook',
    name: 'Ops',
    events: ['backup.verify_failed'],
    url: receiver.url,
  });
  expect(integration.status, integration.text).toBe(201);
  hook = new Webhook(integration.body.secret);
  // the project's rule: the hook hears of a failed drill, and the team's admins get an e-mail of it
  const rule = await owner.post(`/projects/${w.project.id}/notifications`, {
    rules: [{ event: 'backup.verify_failed', email: 'admins', integration_ids: [integration.body.id] }],
  });
  expect(rule.status, rule.text).toBe(200);
  await runTask(`${env()}/services`, { kind: 'postgresql', plan: 'small' });
  await sql(`CREATE TABLE notes (id serial PRIMARY KEY, body text);
             INSERT INTO notes (body) VALUES ('a'), ('b'), ('c');
             CREATE SCHEMA shop; CREATE TABLE shop.orders (id int); INSERT INTO shop.orders SELECT generate_series(1, 250);`);
  // files in the volume: ./, a.txt, sub/, sub/b.txt, sub/deep/, sub/deep/c.bin
  const volume = await environmentVolume(t.deps.knex, t.config.storageRoots, w.environment.id);
  mkdirSync(join(volume, 'sub', 'deep'), { recursive: true });
  writeFileSync(join(volume, 'a.txt'), 'hello');
  writeFileSync(join(volume, 'sub', 'b.txt'), 'x'.repeat(70_000));
  writeFileSync(join(volume, 'sub', 'deep', 'c.bin'), Buffer.alloc(1536, 7));
  const walk = (d: string): number =>
    readdirSync(d, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? walk(join(d, e.name)) : 1), 1);
  volumeEntries = walk(volume);
}, 180_000);

afterAll(async () => {
  await receiver?.stop();
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows) await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name });
});

describe('a backup records what it took', () => {
  it("records every table's row count, taken in the dump's snapshot, and the tar's entries", async () => {
    const id = await backUp();
    const row = await t.deps.knex('backups').where({ id }).first();
    expect(row.counts).toEqual({ tables: { 'public.notes': 3, 'shop.orders': 250 }, files: volumeEntries });
    expect(volumeEntries).toBe(6);
    expect(await snapshot(id)).toMatchObject({ verified_at: null, verify_error: null });
  });
});

describe('POST /environments/{id}/backups/{snapshot}/verify', () => {
  it('passes on a good snapshot: compared, verified_at set, every scratch object removed', async () => {
    const id = await backUp();
    // rows written after the backup are not in the snapshot, and do not upset its drill
    await sql(`INSERT INTO notes (body) VALUES ('after')`);
    const task = await runTask(`${env()}/backups/${id}/verify`, {});
    expect(task).toMatchObject({ kind: 'backups', type: 'verify' });
    expect(task.result).toMatchObject({
      backup_id: id,
      compared: true,
      restored: { parts: ['database', 'files'], tables: 2, rows: 253, files: volumeEntries },
    });
    const s = await snapshot(id);
    expect(s.verify_error).toBeNull();
    expect(Date.now() - Date.parse(s.verified_at)).toBeLessThan(10 * 60_000);
    await expectNoScratch(task.id);
    expect((await owner.get(`/tasks/${task.id}/log`)).text).toMatch(/match what the backup recorded/);
  });

  it('verifies a snapshot taken before counts were recorded by its restore alone', async () => {
    const id = await backUp();
    await t.deps.knex('backups').where({ id }).update({ counts: null });
    const task = await runTask(`${env()}/backups/${id}/verify`, {});
    expect(task.result).toMatchObject({ compared: false, restored: { tables: 2, rows: 254 } });
    expect((await snapshot(id)).verify_error).toBeNull();
  });

  it('fails when the restored copy differs from what the backup recorded, naming the table', async () => {
    const id = await backUp();
    await t.deps
      .knex('backups')
      .where({ id })
      .update({ counts: JSON.stringify({ tables: { 'public.notes': 5, 'shop.orders': 250 }, files: volumeEntries }) });
    const task = await runTask(`${env()}/backups/${id}/verify`, {}, 'failed');
    expect(task.error).toMatch(/table public\.notes has 4 rows, the backup recorded 5/);
    expect((await snapshot(id)).verify_error).toMatch(/public\.notes has 4 rows/);
    await expectNoScratch(task.id);
  });

  it('fails on a snapshot corrupted at its destination: verify_error, the activity, and the webhook say so', async () => {
    const id = await backUp();
    const file = join(destinationDir, w.environment.id, `${id}.vcb`);
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    writeFileSync(file, bytes);
    const before = receiver.received.length;
    const task = await runTask(`${env()}/backups/${id}/verify`, {}, 'failed');
    expect(task.error).toMatch(/restore drill failed: .*SHA-256 differs/);
    const s = await snapshot(id);
    expect(s.verify_error).toBe(task.error);
    expect(s.verified_at).not.toBeNull();
    await expectNoScratch(task.id);

    const activity = await owner.get(`/teams/${w.team.id}/activity?kind=backups&type=verify_failed`);
    expect(activity.body.data.filter((e: { task_id: string }) => e.task_id === task.id)).toEqual([
      expect.objectContaining({ kind: 'backups', type: 'verify_failed', environment_id: w.environment.id }),
    ]);

    const got = (await receiver.waitFor(before + 1, 30_000)).slice(before);
    expect(got).toHaveLength(1);
    const event = hook.verify(got[0].body, got[0].headers as Record<string, string>) as Record<string, unknown>;
    expect(event).toMatchObject({
      id: `evt_backup_verify_failed_${task.id}`,
      event: 'backup.verify_failed',
      team_id: w.team.id,
      data: {
        backup: { id },
        task: { id: task.id },
        environment: { id: w.environment.id, name: w.environment.name },
        reason: task.error,
      },
    });
    // the admins' e-mail: once, with the reason and what to do
    const mail = await t.smtp!.waitFor((m) => m.text.includes(`/tasks/${task.id}`), 30_000);
    expect(mail.subject).toBe(`A snapshot of ${w.project.name} / ${w.environment.name} did not restore`);
    expect(mail.to).toEqual([w.owner.email]);
    expect(mail.text).toContain('SHA-256 differs');
    expect(mail.text).toContain('take a backup now');
    expect(t.smtp!.messages.filter((m) => m.text.includes(`/tasks/${task.id}`))).toHaveLength(1);
    // A drill that passes later clears the error (the object put back as it was stored).
    bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    writeFileSync(file, bytes);
    await runTask(`${env()}/backups/${id}/verify`, {});
    expect((await snapshot(id)).verify_error).toBeNull();
  });

  it('fails on a snapshot whose object was corrupted in an S3 store, mid-stream, and removes its scratch', async () => {
    const s3 = await startS3();
    try {
      const dest = await owner.post(`/teams/${w.team.id}/backup-destinations`, {
        kind: 's3',
        name: 's3',
        endpoint: s3.endpoint,
        region: 'us-east-1',
        bucket: 'backups',
        access_key_id: s3.accessKeyId,
        secret_access_key: s3.secretAccessKey,
      });
      expect(dest.status, dest.text).toBe(201);
      const id = (await runTask(`${env()}/backups`, { destination_id: dest.body.id })).result!.backup_id as string;
      const files = (d: string): string[] =>
        readdirSync(d, { withFileTypes: true }).flatMap((e) =>
          e.isDirectory() ? files(join(d, e.name)) : [join(d, e.name)],
        );
      const object = files(s3.directory).find((f) => f.includes(id) && f.endsWith('._S3rver_object'));
      expect(object).toBeTruthy();
      const bytes = readFileSync(object!);
      bytes[bytes.length - 40] ^= 0x01; // in the last frame: the database is restored into scratch first
      writeFileSync(object!, bytes);
      const task = await runTask(`${env()}/backups/${id}/verify`, {}, 'failed');
      expect(task.error).toMatch(/restore drill failed: .*(does not authenticate|SHA-256 differs)/);
      expect((await snapshot(id)).verify_error).toBe(task.error);
      await expectNoScratch(task.id);
    } finally {
      await s3.stop();
    }
  });

  it('refuses an unknown snapshot (404) and one that is not available (409), starting nothing', async () => {
    const tasks = async () => Number((await t.deps.knex('tasks').where({ type: 'verify' }).count({ n: '*' }))[0].n);
    const n = await tasks();
    expect((await owner.post(`${env()}/backups/${crypto.randomUUID()}/verify`, {})).status).toBe(404);
    const [failed] = await t.deps
      .knex('backups')
      .insert({
        team_id: w.team.id,
        project_id: w.project.id,
        environment_id: w.environment.id,
        destination_id: destinationId,
        status: 'failed',
        trigger: 'manual',
        contents: JSON.stringify(['files']),
        object_key: `${w.environment.id}/failed.vcb`,
        key_fingerprint: 'x',
      })
      .returning('id');
    const res = await owner.post(`${env()}/backups/${failed.id}/verify`, {});
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('snapshot_not_available');
    expect((await owner.post(`${env()}/backups/${failed.id}/verify`, { extra: 1 })).status).toBe(422);
    expect(await tasks()).toBe(n);
    await t.deps.knex('backups').where({ id: failed.id }).delete();
  });
});

describe('the restore-drills schedule', () => {
  it("starts a drill of every environment's newest snapshot (via schedule)", async () => {
    const newest = await backUp();
    const { scheduleId } = await ensureRestoreDrillSchedule(t.deps.temporal, t.config.taskQueue);
    await t.deps.temporal.schedule.getHandle(scheduleId).trigger();
    const deadline = Date.now() + 60_000;
    let task: { id: string; status: string } | undefined;
    while (Date.now() < deadline && !(task && ['succeeded', 'failed'].includes(task.status))) {
      task = await t.deps
        .knex('tasks')
        .where({ type: 'verify', account_via: 'schedule' })
        .first('id', 'status', 'params');
      await new Promise((r) => setTimeout(r, 250));
    }
    const row = await t.deps.knex('tasks').where({ id: task!.id }).first();
    expect(row).toMatchObject({ status: 'succeeded', environment_id: w.environment.id, params: { backup_id: newest } });
    expect((await snapshot(newest)).verified_at).not.toBeNull();
    expect(existsSync(join(t.dataDir, 'drills'))).toBe(true);
  });
});
