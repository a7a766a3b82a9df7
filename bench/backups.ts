import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ADMIN_DATABASE_URL, printTable } from './harness';
import { createServiceDatabase, dropServiceDatabase, serviceUrl } from '../activities/data/pg-server';
import { takeSnapshot } from '../activities/data/backup-engine';
import { openStore } from '../activities/data/destinations';

/**
 * Backup throughput: the backup engine (pg_dump -Fc, AES-256-GCM framing, SHA-256, written to a local
 * destination) on a generated database, against plain `pg_dump -Fc > /dev/null` of the same database in the
 * same run. The engine runs in this process as it does in the worker; its resident memory is sampled every
 * 100 ms. BENCH_BACKUP_MB sets the size (default 200 MB, to keep the bench short; the figure is 1 GB).
 * Target: at least 0.8x the plain throughput, memory under 200 MB.
 */
export async function run(): Promise<{ ratio: number; peakMb: number }> {
  const targetMb = Number(process.env.BENCH_BACKUP_MB ?? 200);
  const config = { servicesDatabaseUrl: ADMIN_DATABASE_URL, databaseUrl: undefined };
  const id = randomBytes(4).toString('hex');
  const login = { database: `svc_bench_${id}`, role: `svc_bench_${id}`, password: randomBytes(16).toString('hex') };
  const dir = mkdtempSync(join(tmpdir(), 'vc-bench-backups-'));
  console.log(`[bench] backups: generating a ${targetMb} MB database...`);
  await createServiceDatabase(config, login);
  try {
    const c = new pg.Client({ connectionString: serviceUrl(config, login) });
    await c.connect();
    // ~200 bytes a row of random text (compresses about as well as real data does: poorly).
    const rows = Math.round((targetMb * 1024 * 1024) / 230);
    await c.query(
      `CREATE TABLE big AS SELECT g AS id, md5(random()::text) || md5(random()::text) || md5(random()::text) || md5(random()::text) || md5(random()::text) AS body
       FROM generate_series(1, ${rows}) g`,
    );
    const size = Number((await c.query('SELECT pg_database_size(current_database()) AS n')).rows[0].n);
    await c.end();
    const mb = size / 1024 / 1024;

    const plain = async () => {
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
      const code = await new Promise<number | null>((r) => child.on('close', r));
      if (code !== 0) throw new Error(`pg_dump exited ${code}`);
      return (performance.now() - began) / 1000;
    };
    const engine = async () => {
      const store = openStore({ kind: 'local', settings: { path: dir } }, { outboundAllowedHosts: [] });
      let peak = process.memoryUsage().rss;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
      const began = performance.now();
      const r = await takeSnapshot({
        config,
        source: { login, volume: join(dir, 'no-volume') },
        key: randomBytes(32),
        store,
        objectKey: `s-${Date.now()}.vcb`,
      });
      const seconds = (performance.now() - began) / 1000;
      clearInterval(sampler);
      return { seconds, peakMb: peak / 1024 / 1024, stored: r.sizeBytes / 1024 / 1024 };
    };

    await plain(); // warm the cache
    const p = Math.min(await plain(), await plain());
    const e1 = await engine();
    const e2 = await engine();
    const e = e1.seconds < e2.seconds ? e1 : e2;
    const peakMb = Math.max(e1.peakMb, e2.peakMb);
    const ratio = p / e.seconds;
    printTable(`Backup of a ${mb.toFixed(0)} MB database (best of 2 each)`, [
      { what: 'pg_dump -Fc > /dev/null', seconds: p.toFixed(2), 'MB/s (database size)': (mb / p).toFixed(1) },
      {
        what: 'backup engine (pg_dump -Fc, AES-256-GCM, SHA-256, local destination)',
        seconds: e.seconds.toFixed(2),
        'MB/s (database size)': (mb / e.seconds).toFixed(1),
      },
    ]);
    console.log(
      `stored ${e.stored.toFixed(1)} MB; throughput ratio ${ratio.toFixed(2)}x (target >= 0.8x); peak RSS of the engine's process ${peakMb.toFixed(0)} MB (target < 200 MB)`,
    );
    return { ratio, peakMb };
  } finally {
    await dropServiceDatabase(config, login);
    rmSync(dir, { recursive: true, force: true });
  }
}
