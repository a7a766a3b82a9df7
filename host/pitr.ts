/**
 * Point-in-time recovery of the services server the console runs (CONTRACT "Point-in-time recovery"): its WAL
 * archived with pgBackRest (Debian's `pgbackrest`) into PITR_REPOSITORY, encrypted (aes-256-cbc) under a
 * passphrase of its own, kept sealed under DATA_DIR/secrets and handed to PostgreSQL and pgBackRest only as
 * PGBACKREST_REPO1_CIPHER_PASS in their environment (so are the S3 keys); never in a config file.
 *
 * Every pgBackRest command runs as the cluster's owner (the OS user owning SERVICES_PGDATA), with its config,
 * lock, log and spool paths under DATA_DIR/pitr-run, so that two DATA_DIRs never share a lock. It reaches the
 * server through the server's private Unix socket directory (DATA_DIR/services-socket, 0700, the owner's).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../system/config';
import type { Secrets } from '../system/secrets';
import { open, seal, sealedKeyId } from '../system/crypto';

/** The one stanza of the archive: the services server. */
export const STANZA = 'services';

export interface PitrServer {
  dataDir: string;
  /** The services server's data directory (SERVICES_PGDATA). */
  pgdata: string;
  port: number;
  /** Its private socket directory (0700, the owner's). */
  socketDir: string;
  repository: string;
  days: number;
  /** archive_timeout, seconds (PITR_ARCHIVE_TIMEOUT). */
  archiveTimeout: number;
  s3: Config['pitr']['s3'];
  /** pgBackRest's config file (no secret in it). */
  configFile: string;
  runDir: string;
}

type PitrConfig = Pick<Config, 'dataDir' | 'servicesPgdata' | 'servicesPort' | 'pitr' | 'servicesDatabaseUrl'>;

/** Why the services server has no point-in-time recovery; null when it has. */
export function pitrUnavailableReason(config: Pick<Config, 'servicesPgdata' | 'servicesDatabaseUrl'>): string | null {
  if (config.servicesPgdata) return null;
  return config.servicesDatabaseUrl
    ? 'the services server (SERVICES_DATABASE_URL) is not one the console runs, so its WAL is not archived: set SERVICES_PGDATA instead'
    : 'the console does not run its services server (neither SERVICES_PGDATA nor the embedded server of npm start)';
}

/** The services server the console runs, with where its archive lives; null when it runs none. */
export function pitrServer(config: PitrConfig): PitrServer | null {
  if (!config.servicesPgdata) return null;
  const runDir = join(config.dataDir, 'pitr-run');
  return {
    dataDir: config.dataDir,
    pgdata: config.servicesPgdata,
    port: config.servicesPort,
    socketDir: join(config.dataDir, 'services-socket'),
    repository: config.pitr.repository,
    days: config.pitr.days,
    archiveTimeout: config.pitr.archiveTimeout,
    s3: config.pitr.s3,
    configFile: join(runDir, 'pgbackrest.conf'),
    runDir,
  };
}

/** The OS user pgBackRest and the server run as: the data directory's owner when this process is root. */
export function clusterOwner(server: Pick<PitrServer, 'pgdata'>): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const st = statSync(server.pgdata);
  return { uid: st.uid, gid: st.gid };
}

/** The repository's passphrase: generated once, kept sealed (DATA_DIR/secrets/pitr-passphrase.sealed, 0600). */
export function pitrPassphrase(dataDir: string, secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>) {
  const dir = join(dataDir, 'secrets');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'pitr-passphrase.sealed');
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, seal(secrets, randomBytes(32).toString('base64url'), 'pitr-passphrase'), { mode: 0o600 });
    renameSync(tmp, file);
  }
  const sealed = readFileSync(file, 'utf8').trim();
  const passphrase = open(secrets, sealed, 'pitr-passphrase');
  // sealed under a key since rotated (docs/encryption-keys.md): sealed again under the current one
  if (sealedKeyId(sealed) !== secrets.encryptionKey.id) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, seal(secrets, passphrase, 'pitr-passphrase'), { mode: 0o600 });
    renameSync(tmp, file);
  }
  return passphrase;
}

/** What PostgreSQL (for archive-push) and every pgBackRest command get in their environment. */
export function pitrEnv(server: PitrServer, passphrase: string, password?: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LC_ALL: 'C',
    PGBACKREST_REPO1_CIPHER_PASS: passphrase,
  };
  if (password) env.PGPASSWORD = password;
  if (server.repository.startsWith('s3://')) {
    if (server.s3.accessKeyId) env.PGBACKREST_REPO1_S3_KEY = server.s3.accessKeyId;
    if (server.s3.secretAccessKey) env.PGBACKREST_REPO1_S3_KEY_SECRET = server.s3.secretAccessKey;
  }
  return env;
}

/** The repository lines of pgBackRest's config: a directory, or an S3 bucket and prefix (path-style). */
function repositoryLines(server: PitrServer): string[] {
  if (!server.repository.startsWith('s3://')) return [`repo1-path=${server.repository}`];
  const [bucket, ...prefix] = server.repository.slice(5).split('/');
  const endpoint = new URL(server.s3.endpoint ?? 'https://s3.amazonaws.com');
  return [
    'repo1-type=s3',
    `repo1-path=/${prefix.join('/')}`,
    `repo1-s3-bucket=${bucket}`,
    `repo1-s3-endpoint=${endpoint.hostname}`,
    ...(endpoint.port ? [`repo1-storage-port=${endpoint.port}`] : []),
    `repo1-s3-region=${server.s3.region ?? 'us-east-1'}`,
    'repo1-s3-uri-style=path',
    // S3_CA_FILE: the CA (PEM) that signed the endpoint's certificate, where it is not a public one
    ...(server.s3.caFile ? [`repo1-s3-ca-file=${server.s3.caFile}`] : []),
  ];
}

/**
 * Writes pgBackRest's config and makes its directories (and a directory repository, and the socket directory)
 * the owner's. Idempotent; run before the server starts.
 */
export function preparePitr(server: PitrServer): void {
  const owner = clusterOwner(server);
  const own = (dir: string, mode = 0o700) => {
    mkdirSync(dir, { recursive: true, mode });
    if (owner) chownSync(dir, owner.uid, owner.gid);
  };
  own(server.runDir);
  for (const d of ['lock', 'log', 'spool', 'scratch']) own(join(server.runDir, d));
  own(server.socketDir);
  if (!server.repository.startsWith('s3://')) own(server.repository, 0o750);
  const lines = [
    '[global]',
    ...repositoryLines(server),
    'repo1-cipher-type=aes-256-cbc',
    'repo1-retention-full-type=time',
    `repo1-retention-full=${server.days}`,
    'compress-type=lz4',
    'archive-async=y',
    `spool-path=${join(server.runDir, 'spool')}`,
    `lock-path=${join(server.runDir, 'lock')}`,
    `log-path=${join(server.runDir, 'log')}`,
    'log-level-console=warn',
    'log-level-stderr=error',
    'log-level-file=info',
    'start-fast=y',
    'process-max=2',
    '',
    `[${STANZA}]`,
    `pg1-path=${server.pgdata}`,
    `pg1-port=${server.port}`,
    `pg1-socket-path=${server.socketDir}`,
    'pg1-user=postgres',
    '',
  ];
  const tmp = `${server.configFile}.${process.pid}.tmp`;
  writeFileSync(tmp, lines.join('\n'), { mode: 0o600 });
  if (owner) chownSync(tmp, owner.uid, owner.gid);
  renameSync(tmp, server.configFile);
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The server's settings on every path that starts it: WAL archived by pgBackRest's archive-push, a segment at
 * least every PITR_ARCHIVE_TIMEOUT (60 s; processes/embedded-postgres.ts wakes the checkpointer so that it holds
 * from the start), and the private socket directory pgBackRest reaches it through.
 */
export function archiveFlags(server: PitrServer): string[] {
  const push = `pgbackrest --config=${shellQuote(server.configFile)} --stanza=${STANZA} archive-push %p`;
  return [
    '-c',
    'archive_mode=on',
    '-c',
    `archive_command=${push}`,
    '-c',
    `archive_timeout=${server.archiveTimeout}`,
    '-c',
    `unix_socket_directories=${server.socketDir}`,
    '-c',
    'unix_socket_permissions=0700',
  ];
}

class PitrCommandError extends Error {}

/**
 * Runs one pgBackRest command as the cluster's owner; resolves with its stdout, rejects with the end of its
 * stderr. Where pgBackRest is missing, the error names the command that installs it.
 */
export function pgbackrest(
  server: PitrServer,
  env: Record<string, string>,
  args: string[],
  o: { signal?: AbortSignal } = {},
): Promise<string> {
  const owner = clusterOwner(server);
  return new Promise((resolve, reject) => {
    const child = spawn('pgbackrest', [`--config=${server.configFile}`, `--stanza=${STANZA}`, ...args], {
      cwd: '/',
      env,
      ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: o.signal,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err = (err + c).slice(-4000)));
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(
        new PitrCommandError(
          e.code === 'ENOENT'
            ? 'pgbackrest is not installed: install it with `apt-get install -y pgbackrest` (Debian)'
            : `pgbackrest ${args[0]}: ${e.message}`,
        ),
      ),
    );
    child.on('close', (code, sig) => {
      if (code === 0) resolve(out);
      else
        reject(
          new PitrCommandError(
            `pgbackrest ${args[0]} failed (${sig ?? `exit ${code}`}): ${(err || out).trim().split('\n').slice(-4).join(' ')}`,
          ),
        );
    });
  });
}
