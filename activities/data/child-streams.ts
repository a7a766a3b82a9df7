/**
 * The child processes a snapshot's parts stream through: pg_dump and pg_restore logged in as the service's role
 * (`pgLogin`, never the password in argv) and checked against the server's version, and a sink (a child fed on
 * its stdin, pg_restore or `tar -x`: `spawnSink`, `watchSink`) written with back-pressure and finished by its exit
 * status. The put-back (put-back.ts), the backups (backup-engine.ts) and the restore drills use them.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import type { Config } from '../../system/config';
import { closed } from '../../host/child-output';
import { SAFE_SESSION_OPTIONS, serverMajorVersion, servicesAdminUrl, type ServiceLogin } from '../../host/pg-server';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

/** Arguments and environment that make pg_dump/pg_restore log in as the service role (the password never in argv). */
export function pgLogin(config: PgConfig, login: ServiceLogin) {
  const admin = new URL(servicesAdminUrl(config));
  return {
    args: ['-h', admin.hostname, '-p', admin.port || '5432', '-U', login.role, '-d', login.database],
    // an empty search_path, as every session of the worker (pg-server.ts); pg_dump and pg_restore set theirs too
    env: {
      PATH: process.env.PATH,
      PGPASSWORD: login.password,
      PGCONNECT_TIMEOUT: '10',
      PGOPTIONS: SAFE_SESSION_OPTIONS,
    },
  };
}

/** The client tools' major versions this process has seen suffice (a tool is not asked at every backup and restore). */
const sufficient = new Map<string, number>();

async function clientMajor(tool: string): Promise<number> {
  const known = sufficient.get(tool);
  if (known !== undefined) return known;
  const child = spawn(tool, ['--version']);
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  await closed(child, tool);
  return Number(/(\d+)(?:\.\d+)?/.exec(out)?.[1] ?? 0);
}

/** pg_dump (or pg_restore) must be at least the server's major version; says so plainly when not. */
export async function checkClientVersion(config: PgConfig, tool: 'pg_dump' | 'pg_restore'): Promise<void> {
  const [client, server] = await Promise.all([clientMajor(tool), serverMajorVersion(config).then(Number)]);
  // kept only once it sufficed: a tool found too old is asked again (it may have been upgraded meanwhile)
  if (client >= server) sufficient.set(tool, client);
  else {
    throw new Error(
      `${tool} ${client} cannot work with the PostgreSQL ${server} server of the services: install the PostgreSQL ${server} client tools`,
    );
  }
}

/** Writes to a child's stdin with back-pressure; rejects when the child is gone. */
export async function write(child: ChildProcessWithoutNullStreams, data: Buffer): Promise<void> {
  if (child.stdin.write(data)) return;
  // the listeners of the wait that lost are taken away: a restore waits on drain thousands of times
  const done = new AbortController();
  try {
    await Promise.race([
      once(child.stdin, 'drain', { signal: done.signal }),
      once(child, 'close', { signal: done.signal }).then(() =>
        Promise.reject(new Error('the restoring process ended early')),
      ),
    ]);
  } finally {
    done.abort();
  }
}

/** Ends the sink's input and waits for its exit: an error unless it exited 0 (with the end of its stderr). */
export async function finish(sink: Sink, what: string): Promise<void> {
  sink.child.stdin.end();
  const [code, sig] = await sink.ended;
  if (code !== 0)
    throw new Error(
      `${what} failed (${sig ?? `exit ${code}`}): ${sink.stderr().trim().split('\n').slice(-3).join(' ')}`,
    );
}

export function spawnSink(cmd: string, args: string[], env?: Record<string, string | undefined>) {
  return watchSink(spawn(cmd, args, { env: env ?? { PATH: process.env.PATH } }));
}

type Sink = ReturnType<typeof watchSink>;

/** A child fed on its stdin: its stderr's end kept, its output drained, its end (`closed`) watched from the start. */
export function watchSink(child: ChildProcessWithoutNullStreams) {
  const ended = closed(child, child.spawnfile);
  let stderr = '';
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
  child.stdin.on('error', () => undefined); // EPIPE: reported by the exit code
  child.stdout.resume();
  return { child, stderr: () => stderr, ended };
}
