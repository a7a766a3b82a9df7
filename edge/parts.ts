/**
 * The parts of the edge around HAProxy that the control plane (server.ts) starts before it and stops after:
 * - the Basic password (edge/basic-auth/): the key file HAProxy reads (a second `-f`), the password map,
 *   the checker of legacy hashes; `sync()` after every state applied;
 * - the request log (edge/request-log/): HAProxy's lines for its ring, which forwards to the shipper process's
 *   socket (processes/shipper.ts: the control plane reads no request line);
 * - the CDN tier (edge/cdn/): Varnish behind HAProxy (be_cdn), which fetches its misses from HAProxy's
 *   loopback origin listener (fe_origin), and the purge follower that turns `cdn/clear` into bans.
 * Their configuration lines go into haproxy.cfg through `fragments` (edge/haproxy/config.ts).
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { Secrets } from '../system/secrets';
import { type BasicAuth, startBasicAuth } from './basic-auth/control';
import {
  basicAuthRules,
  basicAuthSections,
  basicAuthTakesSc2,
  basicAuthUseBackend,
  basicAuthVerdict,
} from './basic-auth/haproxy';
import { freeListenPort } from './listen-ports';
import { requestLogFragment } from './request-log/control';
import { requestLogFrontend, requestLogGlobal, requestLogRules, requestLogSections } from './request-log/haproxy';
import { VarnishPurger } from './cdn/bans';
import { Varnish, writeAtomic } from './cdn/varnish';
import { PurgeFollower } from './purges';
import type { ConfigFragments } from './haproxy/config';
import type { HaproxyPaths } from './haproxy/paths';
import { dataPlaneUser, dataPlaneUserLines, openEdgeDir, shareSocket } from './privileges';

type Logger = { warn(obj: unknown, msg?: string): void; info(obj: unknown, msg?: string): void };

export interface EdgeParts {
  /** The lines of the password, the request log (none without a shipper). */
  fragments: ConfigFragments;
  /** More `-f` files for HAProxy (the password's key). */
  configFiles: string[];
  /** Varnish's port and HAProxy's origin listener (the port changes when varnishd restarts on another). */
  cdn: { port: number; originPort: number };
  /** Set by the control plane: called when what HAProxy must hold changed (Varnish moved its port). */
  onChange: () => void;
  purges: PurgeFollower;
  auth: BasicAuth;
  /** The password map: database -> file -> running HAProxy. */
  sync(): Promise<void>;
  /** `keep`: leave Varnish running for a successor (as HAProxy is left). */
  close(keep: boolean): Promise<void>;
}

/** The file that keeps HAProxy's origin listener port for the CDN tier of `dir`. */
const originPortFile = (dir: string) => join(dir, 'origin-port');

/** The origin listener's port kept in `dir`, if a valid one is. */
function keptOriginPort(dir: string): number | null {
  try {
    const port = Number(readFileSync(originPortFile(dir), 'utf8').trim());
    return Number.isInteger(port) && port > 0 && port < 65536 ? port : null;
  } catch {
    return null; // none yet
  }
}

/** HAProxy's origin listener for the CDN: one port, kept across restarts (an adopted Varnish's VCL names it). */
async function originPortOf(dir: string, avoid: { from: number; to: number }): Promise<number> {
  const kept = keptOriginPort(dir);
  if (kept !== null) return kept;
  const port = await freeListenPort('127.0.0.1', avoid);
  writeAtomic(originPortFile(dir), String(port), 0o600);
  return port;
}

/** The CDN tier's directory: Varnish's files and the origin listener's port. */
function cdnDir(dataDir: string, cdn?: { dir?: string }): string {
  return cdn?.dir ?? join(dataDir, 'edge', 'varnish');
}

/**
 * Forgets `port` where the edge kept it as a pick of its own (the origin listener's, Varnish's listener or admin
 * port), so that the next start picks another. An operator's port (EDGE_PORT, ENVIRONMENT_PORTS) is never kept so.
 */
export function forgetPickedPort(dataDir: string, cdn: { dir?: string } | undefined, port: number): void {
  const dir = cdnDir(dataDir, cdn);
  Varnish.forgetPort(dir, port);
  if (keptOriginPort(dir) === port) rmSync(originPortFile(dir), { force: true });
}

export async function startEdgeParts(o: {
  knex: Knex;
  dataDir: string;
  paths: HaproxyPaths;
  secrets: Pick<Secrets, 'encryptionKey'>;
  /** The request log on: HAProxy writes its lines to the ring the shipper process reads. */
  requestLog: boolean;
  /** Varnish's directory (default DATA_DIR/edge/varnish) and storage size. */
  cdn?: { dir?: string; storage?: string };
  /** The range HAProxy listens on whole: the ports the CDN tier picks lie outside it. */
  environmentPorts: { from: number; to: number };
  /** The edge's row (edge/edge-id.ts): the purge follower checks in on it; server.ts deletes it. */
  edge: { id: string; name: string };
  logger?: Logger;
}): Promise<EdgeParts> {
  // HAProxy's workers and Varnish's cache pass through DATA_DIR/edge as users of their own (privileges.ts)
  openEdgeDir(o.dataDir);
  const dataPlane = dataPlaneUser(o.dataDir);
  if (!dataPlane.user) o.logger?.warn({ reason: dataPlane.reason }, "HAProxy's workers run as root");
  const auth = await startBasicAuth({
    knex: o.knex,
    secrets: o.secrets,
    dataDir: o.dataDir,
    adminSocket: o.paths.admin,
    logger: o.logger,
  });
  const log = o.requestLog ? { fragment: requestLogFragment(o.dataDir) } : null;
  shareSocket(auth.paths.checkerSocket, dataPlane.user);
  let varnish: Varnish | null = null;
  let purges: PurgeFollower | null = null;
  let originPort = 0;
  try {
    const dir = cdnDir(o.dataDir, o.cdn);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    originPort = await originPortOf(dir, o.environmentPorts);
    varnish = await Varnish.start({
      dir,
      originPort,
      storage: o.cdn?.storage,
      avoidPorts: o.environmentPorts,
      logger: o.logger,
    });
    purges = new PurgeFollower(
      o.knex,
      new VarnishPurger(varnish),
      (err) => o.logger?.warn({ err: err.message }, 'the edge could not check for CDN purges'),
      { ...o.edge, unregister: false },
    );
    // catches up on the purges an adopted cache missed, then lets it serve
    await purges.start();
  } catch (err) {
    await varnish?.close().catch(() => undefined);
    await auth.close().catch(() => undefined);
    throw err;
  }
  const v = varnish;
  const follower = purges;
  const cdn = { port: v.port, originPort };
  const fragments: ConfigFragments = {
    global: [...dataPlaneUserLines(dataPlane.user), ...(log ? requestLogGlobal() : [])],
    // the password's verdict first: the request log's sequence takes sc2 unless the password needs it
    frontendStart: [
      ...basicAuthVerdict(auth.fragment),
      ...(log ? [...requestLogFrontend(), ...requestLogRules({ unless: basicAuthTakesSc2() })] : []),
    ],
    frontend: basicAuthRules(auth.fragment),
    useBackend: basicAuthUseBackend(),
    sections: [...basicAuthSections(auth.fragment), ...(log ? requestLogSections(log.fragment) : [])],
  };
  const parts: EdgeParts = {
    fragments,
    configFiles: [auth.paths.keyConfig],
    cdn,
    onChange: () => undefined,
    purges: follower,
    auth,
    async sync() {
      await auth.sync();
    },
    async close(keep) {
      await follower.close();
      if (keep) await v.detach();
      else await v.close();
      await auth.close();
    },
  };
  // a varnishd started again on another port (another program took its own): HAProxy's be_cdn servers follow
  v.onPortChange = (port) => {
    cdn.port = port;
    parts.onChange();
  };
  return parts;
}
