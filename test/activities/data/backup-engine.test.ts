import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createServiceDatabase,
  dropServiceDatabase,
  serviceUrl,
  withAdmin,
  type ServiceLogin,
} from '../../../host/pg-server';
import { createRestoreTarget } from '../../../host/pg-restore';
import { copyData, restoreSnapshot, takeSnapshot } from '../../../activities/data/backup-engine';
import { describePutBackState, settlePutBack } from '../../../activities/data/put-back';
import { listLocal, openStore, probeStore } from '../../../host/destinations';
import { decryptSnapshot } from '../../../host/snapshot-format';
import { startS3 } from '../../helpers/s3';
import { volumeTar } from '../../../host/provider/volume';

const config = { servicesDatabaseUrl: inject('adminDatabaseUrl'), databaseUrl: undefined };
const tag = randomBytes(4).toString('hex');
const login = (n: string): ServiceLogin => ({
  database: `svc_t${tag}${n}`,
  role: `svc_t${tag}${n}`,
  password: randomBytes(16).toString('hex'),
});
const a = login('a');
const b = login('b');
const root = mkdtempSync(join(tmpdir(), 'vc-engine-'));
const key = randomBytes(32);
/** The volume reader a provider gives the engine: this machine's. */
const volumes = { volumeTar };
/** The loopback S3 server is listed, as an operator would list an internal store. */
const outbound = { outboundAllowedHosts: ['127.0.0.1'] };
let s3: Awaited<ReturnType<typeof startS3>>;

async function sql(l: ServiceLogin, text: string) {
  const c = new pg.Client({ connectionString: serviceUrl(config, l) });
  await c.connect();
  try {
    return (await c.query(text)).rows;
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  s3 = await startS3();
  await createServiceDatabase(config, a);
  await createServiceDatabase(config, b);
  await sql(
    a,
    "CREATE TABLE notes (id int primary key, body text); INSERT INTO notes VALUES (1, 'original'), (2, 'kept')",
  );
  mkdirSync(join(root, 'vol-a', 'uploads'), { recursive: true });
  mkdirSync(join(root, 'dest')); // a destination is an existing directory (the store makes only what is below it)
  writeFileSync(join(root, 'vol-a', 'uploads', 'cat.txt'), 'meow');
});
afterAll(async () => {
  await dropServiceDatabase(config, a);
  await dropServiceDatabase(config, b);
  await s3?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('a postgresql service', () => {
  it('is reachable by its own role and not by another service role', async () => {
    expect(await sql(a, 'SELECT count(*)::int AS n FROM notes')).toEqual([{ n: 2 }]);
    await expect(sql({ ...b, database: a.database }, 'SELECT 1')).rejects.toThrow(/permission denied/);
  });
});

describe('snapshots', () => {
  const source = { login: a, volume: join(root, 'vol-a') };

  it('round-trip through a local destination: database and files come back after a change', async () => {
    const store = openStore({ kind: 'local', settings: { path: join(root, 'dest') } }, outbound);
    const taken = await takeSnapshot({ config, volumes, source, key, store, objectKey: 'env/one.vcb' });
    expect(taken.contents).toEqual(['database', 'files']);
    expect(taken.sizeBytes).toBe(readFileSync(join(root, 'dest', 'env', 'one.vcb')).length);
    expect(readFileSync(join(root, 'dest', 'env', 'one.vcb')).includes(Buffer.from('original'))).toBe(false);

    await sql(a, "UPDATE notes SET body = 'changed' WHERE id = 1; DELETE FROM notes WHERE id = 2");
    writeFileSync(join(root, 'vol-a', 'uploads', 'cat.txt'), 'woof');
    const expected = { size: taken.sizeBytes, sha256: taken.sha256 };
    const parts = await restoreSnapshot({ config, target: source, key, store, objectKey: 'env/one.vcb', expected });
    expect(parts).toEqual(['database', 'files']);
    expect(await sql(a, 'SELECT id, body FROM notes ORDER BY id')).toEqual([
      { id: 1, body: 'original' },
      { id: 2, body: 'kept' },
    ]);
    expect(readFileSync(join(root, 'vol-a', 'uploads', 'cat.txt'), 'utf8')).toBe('meow');
  });

  it('decrypts with scripts/decrypt-backup.mjs to a dump that pg_restore --list reads', async () => {
    const out = join(root, 'plain');
    execFileSync('node', [
      'scripts/decrypt-backup.mjs',
      '--key',
      key.toString('base64'),
      '--in',
      join(root, 'dest', 'env', 'one.vcb'),
      '--out',
      out,
    ]);
    expect(execFileSync('pg_restore', ['--list', join(out, 'database.dump')]).toString()).toMatch(/TABLE public notes/);
    expect(execFileSync('tar', ['-tf', join(out, 'files.tar')]).toString()).toMatch(/uploads\/cat.txt/);
  });

  it('refuses a damaged snapshot and a wrong key, leaving the live data as it was', async () => {
    const file = join(root, 'dest', 'env', 'one.vcb');
    const bytes = readFileSync(file);
    bytes[bytes.length - 40] ^= 1;
    writeFileSync(join(root, 'dest', 'env', 'bad.vcb'), bytes);
    await sql(a, "UPDATE notes SET body = 'live' WHERE id = 1");
    const store = openStore({ kind: 'local', settings: { path: join(root, 'dest') } }, outbound);
    const stored = (b: Buffer) => ({ size: b.length, sha256: createHash('sha256').update(b).digest('hex') });
    const good = readFileSync(file);
    // the object is not the one its row recorded: refused before a byte is read
    await expect(
      restoreSnapshot({ config, target: source, key, store, objectKey: 'env/bad.vcb', expected: stored(good) }),
    ).rejects.toThrow(/SHA-256 differs/);
    // recorded as it is, the damage is still found by the encryption's authentication
    await expect(
      restoreSnapshot({ config, target: source, key, store, objectKey: 'env/bad.vcb', expected: stored(bytes) }),
    ).rejects.toThrow(/authenticate/);
    await expect(
      restoreSnapshot({
        config,
        target: source,
        key: randomBytes(32),
        store,
        objectKey: 'env/one.vcb',
        expected: stored(good),
      }),
    ).rejects.toThrow(/another key/);
    expect(await sql(a, 'SELECT body FROM notes WHERE id = 1')).toEqual([{ body: 'live' }]);
    expect(existsSync(join(root, 'vol-a.restore'))).toBe(false);
  });

  it('round-trip through a real S3-compatible server, with a probe', async () => {
    const spec = {
      kind: 's3' as const,
      settings: { endpoint: s3.endpoint, region: 'us-east-1', bucket: 'backups', prefix: 'team-x' },
      secrets: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
    };
    expect(await probeStore(spec, { outboundAllowedHosts: [] })).toMatch(/internal address/);
    expect(await probeStore(spec, outbound)).toBeNull();
    expect(await probeStore({ ...spec, settings: { ...spec.settings, bucket: 'missing' } }, outbound)).toMatch(
      /NoSuchBucket/,
    );
    const store = openStore(spec, outbound);
    const taken = await takeSnapshot({ config, volumes, source, key, store, objectKey: 'env/two.vcb' });
    const chunks: Buffer[] = [];
    for await (const p of decryptSnapshot(key, await store.get('env/two.vcb')))
      if (p.part === 'database') chunks.push(p.data);
    expect(Buffer.concat(chunks).subarray(0, 5).toString()).toBe('PGDMP');
    expect(taken.sizeBytes).toBeGreaterThan(100);
    store.close();
  });

  it('a failing part fails the snapshot and leaves no object', async () => {
    const store = openStore({ kind: 'local', settings: { path: join(root, 'dest') } }, outbound);
    const gone = { ...a, password: 'x', database: `svc_t${tag}nothere` };
    await expect(
      takeSnapshot({
        config,
        volumes,
        source: { login: gone, volume: join(root, 'nothing') },
        key,
        store,
        objectKey: 'env/fail.vcb',
      }),
    ).rejects.toThrow(/pg_dump failed/);
    expect((await listLocal(join(root, 'dest'))).filter((f) => f.includes('fail'))).toEqual([]);
  });

  it('deleting an object also removes the half of it a killed writer left (`<name>.partial`)', async () => {
    const store = openStore({ kind: 'local', settings: { path: join(root, 'dest') } }, outbound);
    writeFileSync(join(root, 'dest', 'env', 'killed.vcb.partial'), 'half');
    await store.delete('env/killed.vcb');
    expect((await listLocal(join(root, 'dest'))).filter((f) => f.includes('killed'))).toEqual([]);
  });

  it('sync copies one database and volume into another', async () => {
    const parts = await copyData({ config, volumes, source, target: { login: b, volume: join(root, 'vol-b') } });
    expect(parts).toEqual(['database', 'files']);
    expect(await sql(b, 'SELECT count(*)::int AS n FROM notes')).toEqual([{ n: 2 }]);
    expect(readFileSync(join(root, 'vol-b', 'uploads', 'cat.txt'), 'utf8')).toBe('meow');
  });
});

describe('a restore interrupted between its two renames (worker killed)', () => {
  it('gets the original database back before anything else happens', async () => {
    await withAdmin(config, async (c) => {
      await c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, [b.database]);
      await c.query(`ALTER DATABASE ${b.database} WITH ALLOW_CONNECTIONS false`);
      await c.query(`ALTER DATABASE ${b.database} RENAME TO ${b.database}_old`);
    });
    await createRestoreTarget(config, b);
    expect(await sql(b, 'SELECT count(*)::int AS n FROM notes')).toEqual([{ n: 2 }]);
  });
});

describe('settling a put-back that did not complete (its last attempt failed or its worker was killed)', () => {
  const target = () => ({ login: b, volume: join(root, 'vol-b') });
  const dbs = () =>
    withAdmin(config, async (c) =>
      (await c.query('SELECT datname FROM pg_database')).rows.map((r: { datname: string }) => r.datname),
    );

  it('cut while filling the staging copies: removes them and says nothing was changed', async () => {
    await sql(b, "CREATE TABLE IF NOT EXISTS marks (body text); DELETE FROM marks; INSERT INTO marks VALUES ('live')");
    await createRestoreTarget(config, b); // a half-filled <db>_restore
    mkdirSync(join(root, 'vol-b.restore', 'uploads'), { recursive: true });
    writeFileSync(join(root, 'vol-b.restore', 'uploads', 'half.txt'), 'half');
    const state = await settlePutBack({ config, target: target(), marker: 'task-1' });
    expect(state).toEqual({ database: 'unchanged', files: 'unchanged' });
    expect(describePutBackState(state, 'restore')).toMatch(/as they were before the restore \(nothing was changed\)/);
    expect(await dbs()).not.toContain(`${b.database}_restore`);
    expect(existsSync(join(root, 'vol-b.restore'))).toBe(false);
    expect(await sql(b, 'SELECT body FROM marks')).toEqual([{ body: 'live' }]);
  });

  it('cut inside the files swap, after the database was swapped in: says the database is the new one, files the old', async () => {
    // The database part completed and was swapped in under this task's mark...
    const parts = await copyData({
      config,
      volumes,
      source: { login: a, volume: join(root, 'vol-a') },
      target: target(),
      marker: 'task-2',
    });
    expect(parts).toEqual(['database', 'files']);
    // ...a later put-back of the same task then stops between the files' two renames.
    writeFileSync(join(root, 'vol-b.put-back'), 'an earlier task');
    renameSync(join(root, 'vol-b'), join(root, 'vol-b.old'));
    mkdirSync(join(root, 'vol-b.restore'));
    const state = await settlePutBack({ config, target: target(), marker: 'task-2' });
    expect(state).toEqual({ database: 'put_back', files: 'unchanged' });
    expect(describePutBackState(state, 'sync')).toBe(
      'the database was put back completely; the files are as they were before the sync',
    );
    expect(readFileSync(join(root, 'vol-b', 'uploads', 'cat.txt'), 'utf8')).toBe('meow');
    expect(existsSync(join(root, 'vol-b.old'))).toBe(false);
    expect(existsSync(join(root, 'vol-b.restore'))).toBe(false);
  });

  it('after a complete put-back of that task: says both parts are the new ones', async () => {
    await copyData({
      config,
      volumes,
      source: { login: a, volume: join(root, 'vol-a') },
      target: target(),
      marker: 'task-3',
    });
    expect(await settlePutBack({ config, target: target(), marker: 'task-3' })).toEqual({
      database: 'put_back',
      files: 'put_back',
    });
  });
});
