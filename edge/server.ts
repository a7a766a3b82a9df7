/**
 * The edge's control plane: ONE process (processes/edge.ts) that drives the data plane, HAProxy (edge/haproxy/),
 * which answers every request to an environment on its own port and on EDGE_PORT by Host. No tenant request
 * passes through Node. The control plane reads PostgreSQL, refreshes on the `vc_edge` notification (triggers
 * on the tables it reads) and periodically in case one was lost, and tells HAProxy:
 * - every change of environments, rules and routes (environments and ports added or removed, addresses, agents,
 *   rate limits and their windows, HSTS, stickiness, compression, maintenance, the maintenance and error pages,
 *   domains, instances moving) goes
 *   to the map and ACL files first, then through the runtime API, without a reload: HAProxy binds the whole
 *   ENVIRONMENT_PORTS range and has a backend with SCALE_MAX slots for each of its ports;
 * - a port of the range another program held that became free rewrites haproxy.cfg and reloads hitlessly
 *   (SIGUSR2, coalesced).
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
import { join } from 'node:path';
import { freeListenPort, takenPortOf } from './listen-ports';
import { forgetPickedPort, startEdgeParts } from './parts';
import { CertificateFiles, CRT_LIST } from './certificate-files';
import { defaultCertificate, hostsOf } from './haproxy/tls';
import { slotsFor } from './haproxy/model';
import { ephemeralOverlap, findHeldPorts, heldPortsOf } from './haproxy/held-ports';
import { DEFAULT_PER_ADDRESS } from './haproxy/config';
import { ensureDirs, haproxyPaths } from './haproxy/paths';
import { HaproxyProcess } from './haproxy/process';
import { unregisterEdge } from '../db/queries/cdn';
import { edgeIdOf, edgeName } from './edge-id';
import { EdgeControlPlane } from './control-plane';
import type { Edge, EdgeOptions } from './edge-options';

export { maintenancePage } from './rules';

export type { Edge, EdgeOptions } from './edge-options';

/** Starts of the edge that lost a port it picked itself, before it gives up. */
const PICK_ATTEMPTS = 3;

/**
 * Starts the edge: the certificates' files, the parts around HAProxy (edge/parts.ts), the ports, then the control
 * plane (edge/control-plane.ts) with its first state. A start that fails leaves no row behind unless an HAProxy
 * (adopted) still serves.
 *
 * The ports the edge picks for itself (listen-ports.ts: the CDN's origin listener, Varnish's, EDGE_PORT when
 * unset) are free when picked, but another program can take one before HAProxy or varnishd binds it (as it can
 * take a port of ENVIRONMENT_PORTS found free). A start that fails so starts again, with that port picked anew or
 * left out (held-ports.ts), at most PICK_ATTEMPTS times; EDGE_PORT or the TLS port, the operator's, fail it.
 */
export async function startEdge(o: EdgeOptions): Promise<Edge> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEdgeOnce(o);
    } catch (err) {
      const port = takenPortOf((err as Error).message);
      if (port === null || port === o.edgePort || port === o.tls?.port || attempt >= PICK_ATTEMPTS) throw err;
      forgetPickedPort(o.dataDir, o.cdn, port);
      o.logger?.warn({ port, attempt }, 'another program took a port before the edge bound it: starting again');
    }
  }
}

async function startEdgeOnce(o: EdgeOptions): Promise<Edge> {
  const paths = haproxyPaths(o.dataDir);
  ensureDirs(paths);
  // Automatic HTTPS: the certificates' files (the console's HTTP-01 answers are a map: acme-challenges.ts).
  const syncCertificateFiles = CertificateFiles.syncer(o.knex, o.certificateFiles, o.logger);
  await syncCertificateFiles();
  const certDir = o.certificateFiles?.dir;
  const crtList = certDir ? join(certDir, CRT_LIST) : null;
  const tlsOptions = o.tls && crtList ? { ...o.tls, crtList, defaultCert: defaultCertificate(paths.dir) } : undefined;
  // The password, the request log and the CDN tier (Varnish and its purge follower, whose id is this edge's
  // in edge_instances: its purges and its applied_at), before HAProxy starts.
  // The edge's row is its data plane's (edge-id.ts): an adopted HAProxy's row is carried on, and deleted only
  // once that HAProxy has stopped (close(), or npm start's stop).
  const edgeRow = { id: edgeIdOf(paths), name: edgeName(o.dataDir) };
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
    environmentPorts: o.environmentPorts,
    edge: edgeRow,
    logger: o.logger,
  }).catch(async (err) => {
    await forgetIfStopped();
    throw err;
  });

  const edgePort =
    o.edgePort || (await freeListenPort(o.host === '0.0.0.0' ? '127.0.0.1' : o.host, o.environmentPorts));
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
  const ephemeral = ephemeralOverlap(o.environmentPorts.from, o.environmentPorts.to);
  if (ephemeral)
    o.logger?.warn(
      { ports: `${ephemeral.from}-${ephemeral.to}` },
      "ENVIRONMENT_PORTS reaches into the kernel's ephemeral range (net.ipv4.ip_local_port_range), whose ports any outgoing connection may hold: an environment given one is not served while it is held. Choose a range below it, such as the default 20000-20999",
    );
  const edge = new EdgeControlPlane(o, {
    paths,
    parts,
    haproxy: new HaproxyProcess(paths, parts.configFiles),
    configOptions: {
      paths,
      host: o.host,
      edgePort,
      environmentPorts: o.environmentPorts,
      heldPorts,
      slots,
      trustProxyHops: o.trustProxyHops ?? 0,
      perAddress: o.perAddress ?? DEFAULT_PER_ADDRESS,
      threads: o.threads,
      cdn: parts.cdn,
      fragments: () => parts.fragments,
      tls: tlsOptions,
    },
    slots,
    edgeRow,
    certificates: {
      sync: syncCertificateFiles,
      dir: certDir,
      hosts: () => (tlsOptions && crtList ? hostsOf(crtList) : []),
    },
  });
  // First state: adopt a running HAProxy or start one (a failure here fails the start: HAProxy missing...).
  await edge.start().catch(async (err) => {
    await forgetIfStopped();
    throw err;
  });
  return edge;
}
