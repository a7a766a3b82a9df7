import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { median, percentile as pct, printTable } from './harness';
import { sized } from './quick';
import { loadConfig } from '../system/config';
import { loadSecrets } from '../system/secrets';
import { Supervision } from '../processes/supervision';
import { clusterChild, embeddedPassword, FLAGS } from '../processes/embedded-postgres';
import { servicesPostgresChild, setUpServicesServer } from '../processes/services-postgres';
import { archiveListing, openArchive, takeArchiveBackup } from '../host/pitr-archive';
import { createServiceDatabase, serviceUrl, withAdmin, type ServiceLogin } from '../host/pg-server';
import { dropKeptDatabase } from '../host/pg-restore';
import { commitAfter, keptDatabaseName, replayInScratch } from '../activities/data/pitr-restore';
import { putBack } from '../activities/data/put-back';
import { freePort } from '../test/helpers/ports';

/**
 * Point-in-time recovery (issue 27), on a services server of its own run as `npm start` runs it (SERVICES_PGDATA,
 * its WAL archived with pgBackRest into a directory repository), kept under $TMPDIR/vc-bench-pitr between runs:
 * - the archive's lag under a steady write load: seconds from a commit to its WAL segment in the repository
 *   (target: p99 under 65 s; archive_timeout is 60 s). `--quick` writes for a few seconds and then forces a switch;
 * - the restore to a second of a tenant database of 1 GB (20 MB in `--quick`) beside nine of BENCH_PITR_MB (50 MB;
 *   20 MB in `--quick`), step by step (restore, replay, copy and swap), against `pg_dump -Fc -Z0 | pg_restore` of
 *   the same database into a fresh one (target: at most 2.5x). The generated databases are kept between runs;
 * - the archive's cost on write throughput: pgbench against the server with archiving on and off, alternating
 *   (target: at least 0.9x).
 */
const base = join(tmpdir(), 'vc-bench-pitr');
const say = (m: string) => console.log(`[bench] pitr: ${m}`);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sql<T = Record<string, unknown>>(url: string, text: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows as T[];
  } finally {
    await c.end();
  }
}

/** A service database of `mb` MB of random text, generated once and kept (`bench_ready`). */
async function generated(config: { servicesDatabaseUrl: string; databaseUrl: undefined }, name: string, mb: number) {
  const login: ServiceLogin = { database: name, role: name, password: randomBytes(16).toString('hex') };
  await createServiceDatabase(config, login);
  const url = serviceUrl(config, login);
  if ((await sql(url, "SELECT 1 FROM pg_tables WHERE tablename = 'bench_ready'")).length) return login;
  const rows = Math.round((mb * 1024 * 1024) / 1150);
  say(`generating ${name} (${mb} MB, kept for later runs)...`);
  await sql(
    url,
    `DROP TABLE IF EXISTS big;
     CREATE TABLE big AS SELECT g AS id, r.body FROM generate_series(1, ${rows}) g,
       LATERAL (SELECT string_agg(md5(random()::text || g::text || i::text), '') AS body FROM generate_series(1, 32) i) r;
     CREATE TABLE bench_ready (at timestamptz DEFAULT now()); INSERT INTO bench_ready DEFAULT VALUES;`,
  );
  return login;
}

function run1(cmd: string, args: string[], env: Record<string, string | undefined>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', [cmd, ...args].join(' ')], { env: { PATH: process.env.PATH, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}: ${err.slice(-500)}`)),
    );
  });
}

export async function run() {
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o711);
  const port = await freePort();
  const config = loadConfig({
    ...process.env,
    DATA_DIR: base,
    SERVICES_PGDATA: join(base, 'pgdata'),
    SERVICES_PORT: String(port),
    SERVICES_DATABASE_URL: '',
    PITR_REPOSITORY: join(base, 'repository'),
  });
  const secrets = loadSecrets(base);
  let supervision = new Supervision({ runDir: join(base, 'run'), say: () => undefined });
  const s = await servicesPostgresChild(config, secrets, say);
  await supervision.start(s.spec);
  await setUpServicesServer(s.server, s.url, secrets, say);
  const cfg = { ...config, servicesDatabaseUrl: s.url, databaseUrl: undefined };
  const { archive } = openArchive(cfg, secrets);
  if (!archive) throw new Error('no archive');
  try {
    // ---- the archive's lag ----
    const writes: Array<{ at: number; segment: string }> = [];
    const lags: number[] = [];
    await sql(s.url, 'CREATE TABLE IF NOT EXISTS lag (id bigserial, at timestamptz DEFAULT now())');
    const seconds = sized(150, 5);
    say(`archive lag: a commit every 250 ms for ${seconds} s...`);
    const writer = new pg.Client({ connectionString: s.url });
    await writer.connect();
    const poller = new pg.Client({ connectionString: s.url });
    await poller.connect();
    const poll = async () => {
      const last = (await poller.query('SELECT last_archived_wal AS w FROM pg_stat_archiver')).rows[0].w ?? '';
      for (let i = writes.length - 1; i >= 0; i--)
        if (writes[i].segment <= last) {
          lags.push((Date.now() - writes[i].at) / 1000);
          writes.splice(i, 1);
        }
    };
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      const r = await writer.query(
        'INSERT INTO lag DEFAULT VALUES RETURNING pg_walfile_name(pg_current_wal_insert_lsn()) AS segment',
      );
      writes.push({ at: Date.now(), segment: r.rows[0].segment });
      await poll();
      await pause(250);
    }
    if (sized(false, true)) await writer.query('SELECT pg_switch_wal()');
    const drain = Date.now() + 75_000;
    while (writes.length && Date.now() < drain) {
      await poll();
      await pause(200);
    }
    await writer.end();
    await poller.end();
    printTable('Archive lag: a commit to its WAL segment in the repository (archive_timeout 60 s)', [
      {
        commits: lags.length,
        'p50 (s)': pct(lags, 0.5).toFixed(1),
        'p99 (s)': pct(lags, 0.99).toFixed(1),
        'max (s)': Math.max(...lags).toFixed(1),
        'not archived': writes.length,
      },
    ]);

    // ---- the restore to a second, against pg_dump | pg_restore ----
    const tenantMb = sized(1024, 20);
    const otherMb = Number(process.env.BENCH_PITR_MB ?? sized(50, 20));
    const tenant = await generated(cfg, `svc_bench_rows_${Math.round((tenantMb * 1024 * 1024) / 1150)}`, tenantMb);
    for (let i = 0; i < 9; i++) await generated(cfg, `svc_bench_other_${otherMb}_${i}`, otherMb);
    say('taking a backup of the archive...');
    let t0 = Date.now();
    await takeArchiveBackup(archive, 'incr');
    const backupSeconds = (Date.now() - t0) / 1000;
    const { backups } = await archiveListing(archive);
    await pause(1100);
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    await pause(1100);
    await commitAfter({ config: cfg }, { line: say }, new AbortController().signal);
    const oid = await withAdmin(cfg, async (c) =>
      Number((await c.query('SELECT oid FROM pg_database WHERE datname = $1', [tenant.database])).rows[0].oid),
    );
    t0 = Date.now();
    const scratch = await replayInScratch(archive, {
      database: { name: tenant.database, oid },
      backupLabel: backups.at(-1)!.label,
      at,
      scratch: join(base, 'pitr-run', 'scratch', `bench-${Date.now()}`),
      log: { line: say },
    });
    const keepAs = keptDatabaseName(tenant.database, new Date());
    let copySeconds = 0;
    try {
      const t1 = Date.now();
      async function* parts() {
        for await (const data of scratch.parts[0].source()) yield { part: 'database' as const, data };
      }
      await putBack({ config: cfg, target: { login: tenant, volume: '' }, parts: parts(), marker: 'bench', keepAs });
      copySeconds = (Date.now() - t1) / 1000;
    } finally {
      await scratch.close();
    }
    const pitrSeconds = (Date.now() - t0) / 1000;
    await dropKeptDatabase(cfg, keepAs);
    // the baseline: the same database dumped and restored into a fresh one
    await withAdmin(cfg, (c) => c.query('DROP DATABASE IF EXISTS bench_plain_copy'));
    await withAdmin(cfg, (c) => c.query('CREATE DATABASE bench_plain_copy'));
    const admin = new URL(s.url);
    const pgArgs = `-h 127.0.0.1 -p ${admin.port} -U postgres`;
    t0 = Date.now();
    await run1(
      `pg_dump -Fc -Z0 ${pgArgs} -d ${tenant.database} | pg_restore --no-owner --no-acl ${pgArgs} -d bench_plain_copy`,
      [],
      { PGPASSWORD: decodeURIComponent(admin.password) },
    );
    const plainSeconds = (Date.now() - t0) / 1000;
    await withAdmin(cfg, (c) => c.query('DROP DATABASE IF EXISTS bench_plain_copy'));
    printTable(
      `Restore to a second: a ${tenantMb} MB tenant database beside nine of ${otherMb} MB (backup taken in ${backupSeconds.toFixed(1)} s)`,
      [
        { step: 'pgbackrest restore --db-include (scratch)', seconds: (scratch.timings.restore / 1000).toFixed(1) },
        { step: 'replay to the second (scratch server)', seconds: (scratch.timings.replay / 1000).toFixed(1) },
        { step: 'copy (pg_dump -Z0 | pg_restore) and swap', seconds: copySeconds.toFixed(1) },
        { step: 'point-in-time restore, in all', seconds: pitrSeconds.toFixed(1) },
        { step: 'baseline: pg_dump -Fc -Z0 | pg_restore', seconds: plainSeconds.toFixed(1) },
        { step: 'ratio (target at most 2.5x)', seconds: `${(pitrSeconds / plainSeconds).toFixed(2)}x` },
      ],
    );

    // ---- pgbench, archiving on and off ----
    const password = embeddedPassword(base, 'services-postgres-password');
    const bench = `-h 127.0.0.1 -p ${port} -U postgres`;
    await withAdmin(cfg, (c) => c.query('DROP DATABASE IF EXISTS bench_pgbench'));
    await withAdmin(cfg, (c) => c.query('CREATE DATABASE bench_pgbench'));
    await run1(`pgbench -i -q -s ${sized(10, 1)} ${bench} bench_pgbench`, [], { PGPASSWORD: password });
    const tps: Record<'on' | 'off', number[]> = { on: [], off: [] };
    const restartWith = async (archiving: boolean) => {
      await supervision.stop(['services-postgres']);
      supervision = new Supervision({ runDir: join(base, 'run'), say: () => undefined });
      const flags = archiving ? s.spec.args.slice(4) : [...FLAGS, '-c', 'archive_mode=off'];
      await supervision.start(
        await clusterChild({
          name: 'services-postgres',
          databaseDir: s.server.pgdata,
          logFile: join(base, 'run', 'services-postgres.log'),
          port,
          password,
          flags,
          env: archive.env,
        }),
      );
    };
    for (let round = 0; round < sized(3, 1); round++) {
      for (const mode of ['on', 'off'] as const) {
        await restartWith(mode === 'on');
        const out = await run1(`pgbench -n -T ${sized(20, 2)} -c 4 -j 2 ${bench} bench_pgbench`, [], {
          PGPASSWORD: password,
        });
        tps[mode].push(Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? 0));
      }
    }
    await restartWith(true);
    printTable('pgbench against the services server (alternating rounds, median tps)', [
      { archiving: 'on', tps: median(tps.on).toFixed(0), runs: tps.on.map((x) => x.toFixed(0)).join(', ') },
      { archiving: 'off', tps: median(tps.off).toFixed(0), runs: tps.off.map((x) => x.toFixed(0)).join(', ') },
      { archiving: 'ratio (target at least 0.9x)', tps: `${(median(tps.on) / median(tps.off)).toFixed(2)}x`, runs: '' },
    ]);
  } finally {
    await supervision.stop(['services-postgres']);
  }
}
