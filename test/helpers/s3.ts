import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';

/**
 * A real S3-compatible server on loopback (the `s3rver` package: signed requests, multipart uploads), its
 * data in a temporary directory. Credentials are s3rver's fixed pair.
 */
export async function startS3(buckets: string[] = ['backups']) {
  const directory = mkdtempSync(join(tmpdir(), 'vc-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = (await server.run()) as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    directory,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async stop() {
      await server.close().catch(() => undefined);
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** A CA and a certificate for `localhost` it signs (pgBackRest checks the endpoint's DNS name), in `dir`. */
function makeCertificates(dir: string) {
  const ossl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  ossl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=vc test CA',
  );
  ossl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost\n');
  ossl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  );
  chmodSync(join(dir, 'ca.pem'), 0o644);
}

/**
 * An s3rver serving https as `https://localhost:<port>` under a certificate a CA of the test's own signs (as
 * pgBackRest, which speaks only https to S3, needs: `S3_CA_FILE` = `caFile`), its data and certificates under
 * `root` (made traversable: the CA file is read by the services server's owner). `objects(bucket)`: the keys stored.
 */
export async function startHttpsS3(root: string, buckets: string[]) {
  const certs = join(root, 'certs');
  mkdirSync(certs, { recursive: true });
  chmodSync(root, 0o755);
  chmodSync(certs, 0o755);
  makeCertificates(certs);
  const directory = join(root, 's3');
  mkdirSync(directory);
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    key: readFileSync(join(certs, 'server.key')),
    cert: readFileSync(join(certs, 'server.pem')),
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port } = (await server.run()) as { port: number };
  return {
    endpoint: `https://localhost:${port}`,
    caFile: join(certs, 'ca.pem'),
    directory,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    /** The keys of a bucket's objects in s3rver's store (`<key>._S3rver_object` files). */
    objects(bucket: string): string[] {
      const dir = join(directory, bucket);
      if (!existsSync(dir)) return [];
      return readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('._S3rver_object'))
        .map((f) => f.slice(0, -'._S3rver_object'.length));
    },
    /** An object's stored bytes. */
    read: (bucket: string, key: string) => readFileSync(join(directory, bucket, `${key}._S3rver_object`)),
    stop: () => server.close().catch(() => undefined) as Promise<void>,
  };
}
