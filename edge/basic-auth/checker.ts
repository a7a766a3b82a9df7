/**
 * The checker for rows saved before the digest existed (docs/edge-password-and-logs.md). HAProxy sends it a
 * request of an environment whose map value is `legacy` when the request carries Basic credentials, with the
 * environment id in `X-VC-Environment` (set by the backend, never the client's). The checker verifies the
 * argon2id hash once; when it matches, it stores the keyed digest beside the hash (only if the hash is still
 * the same), puts it into HAProxy's map (runtime API) and answers 307 to the same URL: the client sends the
 * request again with the same credentials and HAProxy checks it alone from then on. Else 401 (HAProxy counts
 * it as a failed attempt). The clear password exists only in this request's memory.
 *
 * It listens on a unix socket in a directory only the control plane's user can enter. At most two argon2
 * verifications run at once, so an attack on a legacy row costs the shared edge little; HAProxy's failed-
 * attempt limit applies before a request gets here.
 */
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { dirname } from 'node:path';
import { verify } from '@node-rs/argon2';
import type { Knex } from 'knex';
import { edgePasswordDigest, edgePasswordKey } from '../../system/edge-password';
import type { Secrets } from '../../system/secrets';
import { WWW_AUTHENTICATE } from './haproxy';
import { environmentEdgeOf, recordPasswordDigest } from '../../db/queries/edge-settings';

interface PasswordCheckerOptions {
  knex: Knex;
  secrets: Pick<Secrets, 'encryptionKey'>;
  socketPath: string;
  /** Puts the new digest into HAProxy's map (PasswordMap.set); the answer waits for it. */
  onDigest(envId: string, digest: string): Promise<unknown>;
  logger?: { warn(obj: unknown, msg?: string): void };
}

export interface PasswordChecker {
  /** argon2 verifications made (for tests and the bench). */
  verifications(): number;
  close(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function credentials(header: string | undefined): { username: string; password: string } | null {
  const m = /^basic +([A-Za-z0-9+/=]+)$/i.exec(header ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  return i < 0 ? null : { username: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

export async function startPasswordChecker(o: PasswordCheckerOptions): Promise<PasswordChecker> {
  const key = edgePasswordKey(o.secrets);
  let running = 0;
  let verifications = 0;
  const waiting: (() => void)[] = [];
  const slot = async <T>(f: () => Promise<T>): Promise<T> => {
    if (running >= 2) await new Promise<void>((r) => waiting.push(r));
    running += 1;
    try {
      return await f();
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };

  async function check(req: http.IncomingMessage): Promise<'again' | 'no'> {
    const envId = String(req.headers['x-vc-environment'] ?? '');
    const given = credentials(req.headers.authorization);
    if (!UUID.test(envId) || !given) return 'no';
    const row = await environmentEdgeOf(o.knex, envId);
    // No password any more: HAProxy's map is about to lose the entry; the retry meets the new state.
    if (!row?.password_hash) return 'again';
    if (row.password_username !== given.username) return 'no';
    const hash = row.password_hash;
    const ok = await slot(async () => {
      verifications += 1;
      return verify(hash, given.password).catch(() => false);
    });
    if (!ok) return 'no';
    const digest = edgePasswordDigest(key, given.username, given.password);
    await recordPasswordDigest(o.knex, envId, hash, { value: digest, keyId: key.id });
    await o.onDigest(envId, digest);
    return 'again';
  }

  mkdirSync(dirname(o.socketPath), { recursive: true, mode: 0o700 });
  rmSync(o.socketPath, { force: true });
  const server = http.createServer((req, res) => {
    req.resume();
    check(req).then(
      (answer) => {
        if (answer === 'again') {
          // Same origin only: an absolute-form or `//host` target becomes `/`.
          const url = req.url ?? '/';
          const location = url.startsWith('/') && !url.startsWith('//') ? url : '/';
          res.writeHead(307, { location, 'cache-control': 'no-store', 'content-length': '0' });
          return res.end();
        }
        res.writeHead(401, {
          'www-authenticate': WWW_AUTHENTICATE,
          'content-type': 'text/plain',
          'cache-control': 'no-store',
        });
        res.end('this site needs a username and password\n');
      },
      (err) => {
        o.logger?.warn({ err: (err as Error).message }, 'the password checker could not answer');
        res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '5' });
        res.end('the password cannot be checked now; try again shortly\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.socketPath, resolve);
  });
  chmodSync(o.socketPath, 0o600);
  return {
    verifications: () => verifications,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
