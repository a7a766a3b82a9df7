/**
 * The edge's control plane: ONE process (processes/edge.ts) that drives the data plane, HAProxy (edge/haproxy/),
 * which answers every request to an environment on its own port and on EDGE_PORT by Host. No tenant request
 * passes through Node. The control plane reads PostgreSQL, refreshes on the `vc_edge` notification (triggers
 * on the tables it reads) and periodically in case one was lost, and tells HAProxy:
 * - every change of environments, rules and routes (environments and ports added or removed, addresses, agents,
 *   rate limits and their windows, HSTS, stickiness, compression, maintenance and its pages, domains,
 *   instances moving) goes
 *   to the map and ACL files first, then through the runtime API, without a reload: HAProxy binds the whole
 *   ENVIRONMENT_PORTS range and has a backend with SCALE_MAX slots for each of its ports;
 * - a project's error page (a file HAProxy reads when it loads) rewrites haproxy.cfg and reloads hitlessly
 *   (SIGUSR2, coalesced), as does a port of the range another program held that became free.
 * Each applied state is checked in (`edge_instances.applied_at`, the database clock when it was read), so a
 * deploy or a maintenance switch waits until every live edge serves it (db/queries/edge-routes.ts).
 *
 * A control plane that finds HAProxy running (a previous one was SIGKILLed) adopts it; if HAProxy dies it is
 * started again within a second. `close()` stops it.
 *
 * Around HAProxy (edge/parts.ts): the Basic password (its map synced after every state applied), the request
 * log's lines (HAProxy's ring -> the shipper process, processes/shipper.ts: this process reads no request line)
 * and the CDN tier (Varnish behind HAProxy, the purge
 * follower's bans); their lines go into haproxy.cfg.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import pg from 'pg';
import { type EdgeState, loadEdgeState } from './state';
import { freeListenPort } from './listen-ports';
import { startEdgeParts } from './parts';
import type { Secrets } from '../system/secrets';
import { CertificateFiles, type CertificateFilesOptions, CRT_LIST } from './certificate-files';
import { applyCertificateChanges, HaproxyCertificates } from './haproxy-certificates';
import { defaultCertificate, hostsOf } from './haproxy/tls';
import { buildModel, type EdgeModel, mapFile, slotsFor } from './haproxy/model';
import { MAINTENANCE_LUA, maintenanceLua } from './haproxy/maintenance-page';
import { bindable, findHeldPorts, heldPortsOf } from './haproxy/held-ports';
import { DEFAULT_PER_ADDRESS, renderConfig } from './haproxy/config';
import { ensureDirs, haproxyPaths, writeAtomic } from './haproxy/paths';
import { DataPlaneFiles } from './haproxy/files';
import { HaproxyProcess } from './haproxy/process';
import { allServerCommands, applyFiles, applyServers, changedFiles, serverCommands } from './haproxy/runtime';
import { EDGE_CHANNEL, edgeApplied, edgeSessionName } from '../db/queries/edge-routes';
import { unregisterEdge } from '../db/queries/cdn';
import { edgeIdOf, edgeName } from './edge-id';

export { maintenancePage } from './rules';

export interface EdgeOptions {
  knex: Knex;
  databaseUrl: string;
  /** Address every listener binds (ENVIRONMENT_BIND). */
  host: string;
  /** EDGE_PORT; 0: a free port chosen at start (tests). */
  edgePort: number;
  /** ENVIRONMENT_PORTS: HAProxy binds the whole range, with one backend per port. */
  environmentPorts: { from: number; to: number };
  /** SCALE_MAX: each backend's server slots (default 4). */
  scaleMax?: number;
  /** DATA_DIR: the data plane's files go under DATA_DIR/edge/haproxy. */
  dataDir: string;
  logger?: { warn(obj: unknown, msg?: string): void; info(obj: unknown, msg?: string): void };
  /** Reload period in case a notification was lost (default 30 s). */
  refreshMs?: number;
  /** Proxies in front of the edge whose X-Forwarded-For/-Proto are believed (TRUST_PROXY_HOPS). */
  trustProxyHops?: number;
  /** What one client address may hold (default 100 connections, 200 new ones per 10 s; edge/haproxy/config.ts). */
  perAddress?: { connections: number; connectionRate: number };
  /** The key the environments' passwords' digests are made with (edge/basic-auth/). */
  secrets: Pick<Secrets, 'encryptionKey'>;
  /** The CDN tier's Varnish: its directory (default DATA_DIR/edge/varnish; one per live edge) and storage. */
  cdn?: { dir?: string; storage?: string };
  /**
   * Map and ACL files other parts of the edge keep (relative: `maps/<name>.map`, `acls/<name>.acl`), from
   * the state read: written and changed at runtime like the edge's own (prepare/commit), no reload.
   */
  files?: (state: EdgeState) => Map<string, string>;
  /**
   * The request log on: HAProxy writes a line per request into its ring, which forwards to the shipper
   * process's socket under DATA_DIR (processes/shipper.ts; lines wait in the ring while it is away).
   */
  requestLog?: boolean;
  /** Where the certificates' PEM files for HAProxy go (edge/certificate-files.ts); unset: none are written. */
  certificateFiles?: Omit<CertificateFilesOptions, 'knex'>;
  /** HTTPS on EDGE_TLS_PORT (needs `certificateFiles`): the certificates by SNI, 308 from plain HTTP. */
  tls?: { port: number; publicPort: number };
  /** Leave HAProxy running on close() (a control plane stopped to be replaced; tests of adoption). */
  keepDataPlane?: boolean;
}

export interface Edge {
  /** The port EDGE_PORT resolved to. */
  port: number;
  /** The master's pid. */
  haproxyPid(): number | null;
  /** Whether this control plane adopted an HAProxy left running. */
  adopted: boolean;
  /** The reloads this control plane made HAProxy do (an error page, a held port freed; never a rule, a route or a maintenance page). */
  reloads(): number;
  reload(): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = EDGE_CHANNEL;
const WATCH_MS = 500;
const RELOAD_DEBOUNCE_MS = 100;

export async function startEdge(o: EdgeOptions): Promise<Edge> {
  const paths = haproxyPaths(o.dataDir);
  ensureDirs(paths);
  // Automatic HTTPS: the certificates' files (the console's HTTP-01 answers are a map: acme-challenges.ts).
  const syncCertificateFiles = CertificateFiles.syncer(o.knex, o.certificateFiles, o.logger);
  await syncCertificateFiles();
  const certDir = o.certificateFiles?.dir;
  const crtList = certDir ? join(certDir, CRT_LIST) : null;
  const tlsOptions = o.tls && crtList ? { ...o.tls, crtList, defaultCert: defaultCertificate(paths.dir) } : undefined;
  /** The hostnames HAProxy serves a certificate for (the crt-list's). */
  const certified = () => (tlsOptions && crtList ? hostsOf(crtList) : []);
  /**
   * Certificates written or removed since: the new ones loaded into the running HAProxy now (no reload), before
   * the state that redirects their names to HTTPS is applied; the removed ones dropped by the function this
   * returns, called once that state no longer redirects their names (so no name is redirected to HTTPS while
   * it has no certificate of its own).
   */
  async function syncCertificates(): Promise<() => Promise<void>> {
    const none = async () => undefined;
    const changes = await syncCertificateFiles();
    if (!changes || !tlsOptions || !certDir || !haproxy.alive()) return none;
    if (!changes.written.length && !changes.removed.length) return none;
    const runtime = new HaproxyCertificates(paths.admin, tlsOptions.crtList);
    const path = (h: string) => join(certDir, `${h}.pem`);
    const failed = (err: unknown) => {
      o.logger?.warn({ err: (err as Error).message }, 'the edge could not load certificates at runtime; reloading');
      loaded = null; // the next apply reloads: HAProxy reads the files
    };
    await applyCertificateChanges(runtime, path, { ...changes, removed: [] }).catch(failed);
    return () => applyCertificateChanges(runtime, path, { ...changes, written: [] }).catch(failed);
  }
  // The password, the request log and the CDN tier (Varnish and its purge follower, whose id is this edge's
  // in edge_instances: its purges and its applied_at), before HAProxy starts.
  // The edge's row is its data plane's (edge-id.ts): an adopted HAProxy's row is carried on, and deleted only
  // once that HAProxy has stopped (close(), or npm start's stop).
  const edgeRow = { id: edgeIdOf(paths), name: edgeName(o.dataDir) };
  /** A start that failed leaves no row behind unless an HAProxy (adopted) still serves. */
  const forgetIfStopped = async () => {
    if (!(await new HaproxyProcess(paths).running())) await unregisterEdge(o.knex, edgeRow.id).catch(() => undefined);
  };
  const parts = await startEdgeParts({
    knex: o.knex,
    dataDir: o.dataDir,
    paths,
    secrets: o.secrets,
    requestLog: o.requestLog ?? false,
    cdn: o.cdn,
    edge: edgeRow,
    logger: o.logger,
  }).catch(async (err) => {
    await forgetIfStopped();
    throw err;
  });
  const purges = parts.purges;
  /** The password map into the running HAProxy (after every state applied, and every start or reload). */
  const syncPasswords = () =>
    parts.sync().catch((err) => {
      o.logger?.warn({ err: (err as Error).message }, 'the edge could not update the password map; retrying');
      later();
    });

  const edgePort = o.edgePort || (await freeListenPort(o.host === '0.0.0.0' ? '127.0.0.1' : o.host));
  const slots = slotsFor(o.scaleMax ?? 4);
  // the ports of the range another program holds: an adopted HAProxy's configuration names them
  const adoptable = await new HaproxyProcess(paths).running();
  // not adoptable: the workers of a master that died may still hold the ports (they would look held)
  if (!adoptable) await new HaproxyProcess(paths).killLeftovers();
  const heldPorts =
    (adoptable ? heldPortsOf(paths.config) : null) ??
    (await findHeldPorts(o.host, o.environmentPorts.from, o.environmentPorts.to));
  if (heldPorts.length)
    o.logger?.warn({ ports: heldPorts }, 'another program holds ports of ENVIRONMENT_PORTS: the edge leaves them out');
  const configOptions = {
    paths,
    host: o.host,
    edgePort,
    environmentPorts: o.environmentPorts,
    heldPorts,
    slots,
    trustProxyHops: o.trustProxyHops ?? 0,
    perAddress: o.perAddress ?? DEFAULT_PER_ADDRESS,
    cdn: parts.cdn,
    fragments: () => parts.fragments,
    tls: tlsOptions,
  };
  const haproxy = new HaproxyProcess(paths, parts.configFiles);
  let model: EdgeModel | null = null;
  /** The skeleton HAProxy runs (config without servers' addresses, plus pages): a change means a reload. */
  let loaded: string | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | null = null;

  const later = () => {
    if (retry || closed) return;
    retry = setTimeout(() => {
      retry = null;
      void reload().catch(() => undefined);
    }, 1000);
    retry.unref();
  };

  /** The pages, maps and ACLs on disk: what this control plane wrote, so only changes are written again. */
  const files = new DataPlaneFiles(paths.dir);
  /**
   * Writes the files of `next` (pages, maps, ACLs, then haproxy.cfg) that differ from what is on disk,
   * atomically, then removes the pages, maps and ACLs `next` no longer has (the new haproxy.cfg names none).
   */
  function writeFiles(next: EdgeModel): void {
    files.write(next.pages);
    files.write(next.files);
    writeAtomic(paths.config, renderConfig(next, configOptions));
    files.prune({ has: (f) => next.pages.has(f) || next.files.has(f) });
  }

  /** The model of `state`, with the other parts' files. */
  /** Ports outside ENVIRONMENT_PORTS already named in a warning (an environment left from a wider range). */
  const outside = new Set<number>();
  const modelOf = (state: EdgeState, previous: EdgeModel | null) => {
    const m = buildModel(state, previous, certified(), slots);
    m.pages.set(MAINTENANCE_LUA, maintenanceLua(join(paths.dir, mapFile('pages'))));
    for (const [file, text] of o.files?.(state) ?? []) m.files.set(file, text);
    // HAProxy has a backend for the range's ports only: another port is not served (and names no server)
    for (const port of m.envs.keys()) {
      if (port >= o.environmentPorts.from && port <= o.environmentPorts.to) continue;
      m.envs.delete(port);
      if (!outside.has(port))
        o.logger?.warn({ port }, 'an environment has a port outside ENVIRONMENT_PORTS: not served');
      outside.add(port);
    }
    return m;
  };

  const skeletonOf = (m: EdgeModel) =>
    renderConfig(m, configOptions, true) + [...m.pages].map(([f, t]) => `${f}\0${t}`).join('\0');

  /** Makes HAProxy hold `next`: runtime changes, or a reload for structural ones (or a start). */
  async function apply(next: EdgeModel): Promise<boolean> {
    // a held port an environment has: bound (a reload) once the other program lets it go
    for (const port of [...configOptions.heldPorts]) {
      if (!next.envs.has(port)) continue;
      if (await bindable(o.host, port)) configOptions.heldPorts = configOptions.heldPorts.filter((p) => p !== port);
      else {
        o.logger?.warn({ port }, 'the edge cannot listen on an environment port yet; retrying in a second');
        later();
      }
    }
    const before = model;
    writeFiles(next);
    const skeleton = skeletonOf(next);
    if (!haproxy.alive()) {
      const adopted = await haproxy.ensure();
      // an adopted HAProxy runs what the previous control plane wrote: load this one's files
      if (adopted) await haproxy.reload();
    } else if (skeleton !== loaded || !before) {
      // debounced: a burst of changes (notifications come per statement) makes one reload, of the last state
      await new Promise((r) => setTimeout(r, RELOAD_DEBOUNCE_MS));
      if (again && !closed) return false;
      await haproxy.reload();
    } else {
      await applyFiles(paths.admin, paths.dir, next, changedFiles(before, next), before);
      await applyServers(paths.admin, serverCommands(before, next));
    }
    loaded = skeleton;
    model = next;
    return true;
  }

  let reloading: Promise<void> | null = null;
  let again = false;
  async function reload(): Promise<void> {
    if (reloading) {
      again = true;
      return reloading;
    }
    reloading = (async () => {
      do {
        again = false;
        // the database clock before the reads: every change committed before it is in what is applied
        const { rows } = await o.knex.raw('SELECT now() AS at');
        const readAt: Date = rows[0].at;
        const dropRemovedCertificates = await syncCertificates();
        const state = await loadEdgeState(o.knex);
        if (closed) break;
        try {
          let applied = false;
          try {
            applied = await apply(modelOf(state, model));
          } finally {
            await dropRemovedCertificates();
          }
          if (applied) {
            await syncPasswords();
            await edgeApplied(o.knex, edgeRow.id, readAt);
          }
        } catch (err) {
          o.logger?.warn({ err: (err as Error).message }, 'the edge could not apply the new state; retrying');
          // what HAProxy holds is unknown now: the next apply reloads
          loaded = null;
          later();
        }
      } while (again && !closed);
    })().finally(() => {
      reloading = null;
    });
    return reloading;
  }

  // First state: adopt a running HAProxy or start one (a failure here fails the start: HAProxy missing...).
  let adoptedAtStart = false;
  try {
    const { rows } = await o.knex.raw('SELECT now() AS at');
    const state = await loadEdgeState(o.knex);
    const first = modelOf(state, null);
    let running = '';
    try {
      running = readFileSync(paths.config, 'utf8');
    } catch {
      // none yet
    }
    writeFiles(first);
    const adopted = await haproxy.ensure();
    // An adopted HAProxy runs the configuration a previous control plane wrote. The same one: its maps, ACLs
    // and servers are brought in line through the runtime API (no reload: kept-alive clients stay connected).
    if (adopted && running === renderConfig(first, configOptions)) {
      await applyFiles(paths.admin, paths.dir, first, [...first.files.keys()]);
      await applyServers(paths.admin, allServerCommands(first, o.environmentPorts, slots));
    } else if (adopted) await haproxy.reload();
    loaded = skeletonOf(first);
    model = first;
    await parts.sync();
    await edgeApplied(o.knex, edgeRow.id, rows[0].at);
    adoptedAtStart = adopted;
  } catch (err) {
    await parts.close(false).catch(() => undefined);
    await forgetIfStopped();
    throw err;
  }

  // HAProxy died (a SIGKILL, a crash): started again from the files, which hold the last state.
  let restarting = false;
  const watch = setInterval(() => {
    if (closed || restarting || haproxy.alive()) return;
    restarting = true;
    o.logger?.warn({}, 'HAProxy is not running; starting it again');
    loaded = null;
    void haproxy
      .ensure()
      .then(() => reload())
      .catch((err) => o.logger?.warn({ err: (err as Error).message }, 'the edge could not start HAProxy'))
      .finally(() => {
        restarting = false;
      });
  }, WATCH_MS);
  watch.unref();

  // LISTEN on a connection of its own, reconnected when it drops (then reloaded: changes may have been missed).
  let client: pg.Client | null = null;
  async function subscribe(): Promise<void> {
    while (!closed) {
      // named after this edge's row: while it is connected, deploys wait for this edge (awaitEdges); once the
      // process is gone (a SIGKILL closes it), they do not wait out the row's 15 s
      const c = new pg.Client({ connectionString: o.databaseUrl, application_name: edgeSessionName(edgeRow.id) });
      try {
        await c.connect();
        c.on('notification', (n) => {
          if (n.payload === 'cdn_purges') void purges.check().catch(() => undefined);
          else void reload().catch(() => undefined);
        });
        await c.query(`LISTEN ${CHANNEL}`);
        client = c;
        c.on('error', () => {
          client = null;
          void c.end().catch(() => undefined);
          if (!closed) setTimeout(() => void subscribe(), 1000);
        });
        await reload();
        await purges.check().catch(() => undefined);
        return;
      } catch {
        await c.end().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
  await subscribe();
  const timer = setInterval(() => void reload().catch(() => undefined), o.refreshMs ?? 30_000);
  timer.unref();

  return {
    port: edgePort,
    haproxyPid: () => haproxy.pid,
    adopted: adoptedAtStart,
    reloads: () => haproxy.reloads,
    reload,
    async close() {
      closed = true;
      clearInterval(timer);
      clearInterval(watch);
      if (retry) clearTimeout(retry);
      await reloading?.catch(() => undefined);
      await client?.end().catch(() => undefined);
      // HAProxy and Varnish stop side by side (each may take seconds): within the supervisor's stop timeout. Both
      // are waited for, also when one fails, so a failure of the one never leaves the other running.
      const stopped = await Promise.allSettled([
        o.keepDataPlane ? undefined : haproxy.stop(),
        parts.close(o.keepDataPlane ?? false),
      ]);
      // its row goes once its HAProxy has stopped (kept for a successor that adopts it)
      if (!o.keepDataPlane && stopped[0].status === 'fulfilled') await unregisterEdge(o.knex, edgeRow.id);
      const failed = stopped.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
