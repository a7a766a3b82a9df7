import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Archive, openArchive, takeArchiveBackup } from '../../host/pitr-archive';
import { pgbackrest, pitrServer, preparePitr } from '../../host/pitr';
import { servicesPostgresChild, setUpServicesServer } from '../../processes/services-postgres';
import { loadConfig } from '../../system/config';
import { loadSecrets } from '../../system/secrets';
import { freePort } from '../helpers/ports';
import { startHttpsS3 } from '../helpers/s3';

/**
 * PITR_REPOSITORY as s3://bucket/prefix through the real path: a services server (SERVICES_PGDATA) started as
 * `npm start` starts it (processes/services-postgres.ts: its archive flags and environment, then stanza-create),
 * an s3rver serving https with a certificate signed by a CA of the test's own, trusted by pgBackRest through
 * S3_CA_FILE. A WAL segment pushed and a full backup land in the bucket, encrypted; `pgbackrest info` reads
 * them back. Without the CA file, pgBackRest refuses the endpoint's certificate.
 */
const root = mkdtempSync(join(tmpdir(), 'vc-pitr-s3-'));
let s3: Awaited<ReturnType<typeof startHttpsS3>>;
let postgres: ChildProcess | undefined;
let env: NodeJS.ProcessEnv;
let password: string;
let servicesPort: number;
let archived: Archive | null = null;

beforeAll(async () => {
  s3 = await startHttpsS3(root, ['pitr']);
  servicesPort = await freePort();
  const dataDir = join(root, 'data');
  mkdirSync(dataDir);
  env = {
    ...process.env,
    DATA_DIR: dataDir,
    SERVICES_PGDATA: join(dataDir, 'services-pgdata'),
    SERVICES_PORT: String(servicesPort),
    PITR_REPOSITORY: 's3://pitr/archive/one',
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    S3_CA_FILE: s3.caFile,
  };
}, 120_000);

afterAll(async () => {
  if (postgres?.pid && postgres.exitCode === null) {
    // an immediate shutdown: the cluster is thrown away, and a fast one waits for the archiver's last push (the
    // shutdown's segment, or archive_timeout's), which the test no longer reads: 30 to 60 s of a run
    const exited = new Promise((r) => postgres!.once('exit', r));
    postgres.kill('SIGQUIT');
    await exited;
  }
  // pgBackRest's async archive-push runs on beside the server: ended (stop --force) before its store goes
  if (archived) await pgbackrest(archived.server, archived.env, ['stop', '--force']).catch(() => undefined);
  await s3?.stop();
  rmSync(root, { recursive: true, force: true });
}, 120_000);

describe('PITR_REPOSITORY as s3://bucket/prefix over https', () => {
  it('archives WAL and a full backup into the bucket, encrypted, and pgbackrest info reads them', async () => {
    const config = loadConfig(env);
    const secrets = loadSecrets(config.dataDir);
    const { spec, url, server } = await servicesPostgresChild(config, secrets, () => undefined);
    password = decodeURIComponent(new URL(url).password);
    postgres = spawn(spec.command, spec.args, {
      env: spec.env,
      uid: spec.uid,
      gid: spec.gid,
      stdio: spec.stdio,
    });
    await spec.ready!(postgres.pid!);
    await setUpServicesServer(server, url, secrets, () => undefined);

    // a table, then the WAL switched: archive-push puts the segment into the bucket
    const c = new pg.Client({
      host: '127.0.0.1',
      port: servicesPort,
      user: 'postgres',
      password,
      database: 'postgres',
    });
    await c.connect();
    await c.query('CREATE TABLE marker (v text)');
    await c.query("INSERT INTO marker VALUES ('plain-text-marker-in-the-archive')");
    await c.query('SELECT pg_switch_wal()');
    await c.end();

    // as the worker sees it under npm start: the server's URL beside SERVICES_PGDATA
    const { archive } = openArchive(loadConfig({ ...env, SERVICES_DATABASE_URL: url }), secrets);
    archived = archive;
    await takeArchiveBackup(archive!, 'full');

    const stored = s3.objects('pitr');
    const prefix = 'archive/one/';
    expect(stored.some((f) => f.startsWith(`${prefix}backup/services/`) && f.includes('backup.manifest'))).toBe(true);
    expect(stored.some((f) => f.startsWith(`${prefix}archive/services/`) && /\/[0-9A-F]{24}-/.test(f))).toBe(true);
    // encrypted: no stored object reads as what was written (nor as a manifest's plain INI)
    expect(stored.length).toBeGreaterThan(2);
    for (const key of stored) {
      const body = s3.read('pitr', key);
      expect(body.subarray(0, 8).toString('latin1'), key).toBe('Salted__');
      expect(body.includes('plain-text-marker-in-the-archive'), key).toBe(false);
    }

    expect(readFileSync(archive!.server.configFile, 'utf8')).toContain(`repo1-s3-ca-file=${env.S3_CA_FILE}`);
    const info = JSON.parse(await pgbackrest(archive!.server, archive!.env, ['info', '--output=json']));
    expect(info[0].status.code, JSON.stringify(info[0].status)).toBe(0);
    expect(info[0].cipher).toBe('aes-256-cbc');
    expect(info[0].backup.map((b: { type: string }) => b.type)).toEqual(['full']);
    expect(info[0].archive[0].max).toMatch(/^[0-9A-F]{24}$/);

    // the same repository without the passphrase cannot be read
    const wrong = { ...archive!.env, PGBACKREST_REPO1_CIPHER_PASS: 'not-the-passphrase' };
    const refused = await pgbackrest(archive!.server, wrong, ['info', '--output=json']).then(
      (out) => out,
      (err: Error) => err.message,
    );
    expect(refused).not.toContain('"status":{"code":0');
    expect(refused).not.toContain('"label"');
    // a wrong passphrase fails either way: as FormatError (what it decrypted is no info file) or as CryptoError
    // ("unable to flush": the cipher refused the last block); a clean-clone CI run got the second
    expect(refused).toMatch(/"code":99,"message":"\[(FormatError|CryptoError)\] unable to load info file/);

    // without S3_CA_FILE, pgBackRest does not trust the endpoint's certificate (the case before the setting)
    const untrusted = pitrServer(loadConfig({ ...env, S3_CA_FILE: '' }))!;
    preparePitr(untrusted);
    expect(readFileSync(untrusted.configFile, 'utf8')).not.toContain('repo1-s3-ca-file');
    // io-timeout: pgBackRest retries a refused handshake for its 60 s default before it reports it
    const tls = await pgbackrest(untrusted, archive!.env, ['info', '--output=json', '--io-timeout=2']).then(
      (out) => out,
      (err: Error) => err.message,
    );
    expect(tls).toMatch(/unable to verify certificate|certificate verify failed/);
    preparePitr(archive!.server); // the trusted config back, for the server's last archive-push at its stop
    expect(readFileSync(archive!.server.configFile, 'utf8')).toContain('repo1-s3-ca-file');
  }, 300_000);
});
