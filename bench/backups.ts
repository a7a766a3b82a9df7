import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ADMIN_DATABASE_URL, printTable } from './harness';
import { createServiceDatabase, dropServiceDatabase, serviceUrl, type ServiceLogin } from '../host/pg-server';
import { sized } from './quick';

/**
 * Backup throughput: the backup engine (pg_dump -Fc, AES-256-GCM framing, SHA-256, written to a local
 * destination) on a generated database, against plain `pg_dump -Fc > /dev/null` of the same database in the
 * same run (alternating, best of 2 each). The engine runs in a process of its own (bench/backup-child.ts), as
 * in the worker; that process's resident memory is sampled from /proc every 50 ms, and it reports its own
 * peak (getrusage) at the end.
 *
 * BENCH_BACKUP_MB sets the size: default 200 MB to keep `npm run bench` short; the figure is
 * `BENCH_BACKUP_MB=1024`. The generated database is kept between runs (`svc_bench_rows_<rows>` on the bench's
 * server; generating 1 GB takes minutes here): BENCH_BACKUP_DROP=1 drops it at the end.
 * Target: at least 0.8x the plain throughput, the engine's process under 200 MB throughout.
 */
const config = { servicesDatabaseUrl: ADMIN_DATABASE_URL, databaseUrl: undefined };

async function query(login: ServiceLogin, sql: string) {
  const c = new pg.Client({ connectionString: serviceUrl(config, login) });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

/** The cached database of `targetMb`, generated when missing (random hex text: it compresses poorly). */
async function generated(targetMb: number): Promise<ServiceLogin> {
  // ~1.15 KB a row on disk: 32 random md5s of hex text, made per row by a lateral subquery.
  const rows = Math.round((targetMb * 1024 * 1024) / 1150);
  const name = `svc_bench_rows_${rows}`;
  const login = { database: name, role: name, password: randomBytes(16).toString('hex') };
  await createServiceDatabase(config, login); // idempotent: sets this run's password
  const ready = await query(login, "SELECT 1 FROM pg_tables WHERE tablename = 'bench_ready'");
  if (ready.length) {
    console.log(`[bench] backups: reusing the generated ${targetMb} MB database ${name}`);
    return login;
  }
  console.log(`[bench] backups: generating a ${targetMb} MB database ${name} (kept for later runs)...`);
  const began = performance.now();
  await query(
    login,
    `DROP TABLE IF EXISTS big;
     CREATE UNLOGGED TABLE big AS SELECT g AS id, r.body
       FROM generate_series(1, ${rows}) g,
       LATERAL (SELECT string_agg(md5(random()::text || g::text || i::text), '') AS body FROM generate_series(1, 32) i) r;
     ALTER TABLE big SET LOGGED;
     CREATE TABLE bench_ready (at timestamptz DEFAULT now()); INSERT INTO bench_ready DEFAULT VALUES;`,
  );
  console.log(`[bench] backups: generated in ${((performance.now() - began) / 1000).toFixed(0)} s`);
  return login;
}

function plainDump(login: ServiceLogin): Promise<number> {
  const began = performance.now();
  const admin = new URL(ADMIN_DATABASE_URL);
  const child = spawn(
    'pg_dump',
    ['-Fc', '-h', admin.hostname, '-p', admin.port || '5432', '-U', login.role, '-d', login.database],
    {
      env: { PATH: process.env.PATH, PGPASSWORD: login.password },
      stdio: ['ignore', openSync('/dev/null', 'w'), 'inherit'],
    },
  );
  return new Promise((resolve, reject) =>
    child.on('close', (code) =>
      code === 0 ? resolve((performance.now() - began) / 1000) : reject(new Error(`pg_dump exited ${code}`)),
    ),
  );
}

const rssOf = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0; // gone
  }
};

async function engineDump(login: ServiceLogin, dir: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'backup-child.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      BENCH_CONFIG: JSON.stringify({ adminUrl: ADMIN_DATABASE_URL, login, dir, objectKey: `s-${Date.now()}.vcb` }),
    },
  });
  let sampled = 0;
  const sampler = setInterval(() => (sampled = Math.max(sampled, rssOf(child.pid!))), 50);
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`the engine's process exited ${code}`);
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as { seconds: number; stored: number; maxRss: number };
  return { ...r, sampled };
}

export async function run(): Promise<{ ratio: number; peakMb: number }> {
  const targetMb = Number(process.env.BENCH_BACKUP_MB ?? sized(200, 5));
  const login = await generated(targetMb);
  const dir = mkdtempSync(join(tmpdir(), 'vc-bench-backups-'));
  try {
    const size = Number((await query(login, 'SELECT pg_database_size(current_database()) AS n'))[0].n);
    const mb = size / 1024 / 1024;
    await plainDump(login); // warm the cache
    const plain: number[] = [];
    const engine: Awaited<ReturnType<typeof engineDump>>[] = [];
    for (let i = 0; i < 2; i++) {
      plain.push(await plainDump(login));
      engine.push(await engineDump(login, dir));
      // Emptied for the next round; the destination itself stays (a local store never makes its root).
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { mode: 0o700 });
    }
    const p = Math.min(...plain);
    const e = engine.reduce((a, b) => (a.seconds < b.seconds ? a : b));
    const peakMb = Math.max(...engine.map((x) => Math.max(x.sampled, x.maxRss))) / 1024 / 1024;
    const ratio = p / e.seconds;
    printTable(`Backup of a ${mb.toFixed(0)} MB database (alternating, best of 2 each)`, [
      { what: 'pg_dump -Fc > /dev/null', seconds: p.toFixed(2), 'MB/s (database size)': (mb / p).toFixed(1) },
      {
        what: 'backup engine (pg_dump -Fc, AES-256-GCM, SHA-256, local destination)',
        seconds: e.seconds.toFixed(2),
        'MB/s (database size)': (mb / e.seconds).toFixed(1),
      },
    ]);
    console.log(
      `runs (s): pg_dump ${plain.map((x) => x.toFixed(1)).join(', ')}; engine ${engine.map((x) => x.seconds.toFixed(1)).join(', ')}; ` +
        `load average at the end ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`,
    );
    console.log(
      `stored ${(e.stored / 1024 / 1024).toFixed(1)} MB; throughput ratio ${ratio.toFixed(2)}x (target >= 0.8x); ` +
        `peak RSS of the engine's process ${peakMb.toFixed(0)} MB (sampled every 50 ms and its own getrusage peak; target < 200 MB)`,
    );
    return { ratio, peakMb };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (process.env.BENCH_BACKUP_DROP === '1') await dropServiceDatabase(config, login);
    else console.log(`[bench] backups: ${login.database} kept for the next run (BENCH_BACKUP_DROP=1 drops it)`);
  }
}
