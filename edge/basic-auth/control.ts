/**
 * The password's control-plane side in one call (docs/edge-password-and-logs.md): the key file HAProxy reads
 * (an extra `-f`, mode 0600), the map file (written before HAProxy starts), the legacy checker's socket, and
 * `sync()` to call whenever `environment_edges` changes (the `vc_edge` notification) and after every
 * (re)start of HAProxy: the map file, then HAProxy through the runtime API, no reload.
 */
import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { edgePasswordKey } from '../../system/edge-password';
import type { Secrets } from '../../system/secrets';
import { startPasswordChecker, type PasswordChecker } from './checker';
import { basicAuthKeyConfig, type BasicAuthFragment } from './haproxy';
import { loadPasswordEntries, PasswordMap } from './password-map';

interface BasicAuthPaths {
  dir: string;
  mapFile: string;
  checkerSocket: string;
  keyConfig: string;
}

function basicAuthPaths(dataDir: string): BasicAuthPaths {
  const dir = join(dataDir, 'edge', 'auth');
  return {
    dir,
    mapFile: join(dir, 'passwords.map'),
    checkerSocket: join(dir, 'checker.sock'),
    keyConfig: join(dir, 'password-key.cfg'),
  };
}

export interface BasicAuth {
  paths: BasicAuthPaths;
  /** What the configuration's fragment functions take. */
  fragment: BasicAuthFragment;
  /** Database -> map file -> running HAProxy (runtime API). Answers how many entries changed. */
  sync(): Promise<number>;
  checker: PasswordChecker;
  close(): Promise<void>;
}

export async function startBasicAuth(o: {
  knex: Knex;
  secrets: Pick<Secrets, 'encryptionKey'>;
  dataDir: string;
  /** HAProxy's admin socket (runtime API). */
  adminSocket: string;
  logger?: { warn(obj: unknown, msg?: string): void };
}): Promise<BasicAuth> {
  const paths = basicAuthPaths(o.dataDir);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  chmodSync(paths.dir, 0o700);
  const key = edgePasswordKey(o.secrets);
  const tmp = `${paths.keyConfig}.${process.pid}.tmp`;
  writeFileSync(tmp, basicAuthKeyConfig(key.key), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, paths.keyConfig);
  const map = new PasswordMap(paths.mapFile, o.adminSocket);
  const entries = () => loadPasswordEntries(o.knex, key.id);
  map.writeFile(await entries());
  const checker = await startPasswordChecker({
    knex: o.knex,
    secrets: o.secrets,
    socketPath: paths.checkerSocket,
    onDigest: (envId, digest) => map.set(envId, digest),
    logger: o.logger,
  });
  return {
    paths,
    fragment: { mapFile: paths.mapFile, checkerSocket: paths.checkerSocket },
    sync: async () => map.apply(await entries()),
    checker,
    close: () => checker.close(),
  };
}
