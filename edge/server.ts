/**
 * The edge: ONE component in front of every environment, run as its own process (system/edge.ts) so that
 * serving never depends on the worker. It answers on each environment's own public port and on EDGE_PORT
 * by Host header (verified domains), and forwards to the upstream the supervisor published in
 * `edge_routes` (host and port). It reads everything from PostgreSQL and refreshes on the `vc_edge`
 * notification (triggers on the tables it reads), plus a periodic reload in case a notification was lost.
 *
 * An environment may run several web instances: the edge balances over them and, with the environment's
 * stickiness, keeps a client on one with the `vc_instance` cookie (balance.ts). An upstream that refuses
 * (the release just switched, before the notification arrived; an instance died) is skipped for a while,
 * and a request without a body is retried on another after the route is read again.
 */
import http from 'node:http';
import type net from 'node:net';
import type { Knex } from 'knex';
import pg from 'pg';
import { forwardHeaders, responseHeaders } from '../activities/provider/proxy';
import {
  loadEdgeState,
  loadRoute,
  type EdgeRoute,
  type EdgeState,
  type EnvironmentRules,
  type ProjectRules,
} from './state';
import { blockedAgent, clientAddress, hstsValue, isHttps, RateWindows } from './rules';
import { hasBody, hostOf, maintenancePage, plain, writeAnswer } from './respond';
import { CdnCache, cacheLifetime, type PendingStore } from './cache';
import { tunnel } from './tunnel';
import { PasswordChecks } from './password';
import { PurgeFollower } from './purges';
import { Balancer, setStickyCookie, stickyCookie, stickyToken } from './balance';
import { LogShipper, type ShipperOptions } from '../logs/shipper';
import { trackRequest } from '../logs/request-log';
import { AcmeChallenges } from './acme-challenges';
import { CertificateFiles, type CertificateFilesOptions } from './certificate-files';

export interface EdgeOptions {
  knex: Knex;
  databaseUrl: string;
  /** Address every listener binds (ENVIRONMENT_BIND). */
  host: string;
  /** EDGE_PORT; 0: an ephemeral port (tests). */
  edgePort: number;
  logger?: { warn(obj: unknown, msg?: string): void; info(obj: unknown, msg?: string): void };
  /** Reload period in case a notification was lost (default 30 s). */
  refreshMs?: number;
  /** Proxies in front of the edge whose X-Forwarded-For/-Proto are believed (TRUST_PROXY_HOPS). */
  trustProxyHops?: number;
  /** The CDN cache's bound in bytes (default 128 MiB). */
  cacheBytes?: number;
  /** Request log shipping (logs/): where machine copies go, the key that opens destinations, the guard. */
  logs?: Omit<ShipperOptions, 'knex' | 'source' | 'logger'>;
  /** Where the certificates' PEM files for HAProxy go (edge/certificate-files.ts); unset: none are written. */
  certificateFiles?: Omit<CertificateFilesOptions, 'knex'>;
}

export interface Edge {
  /** The port EDGE_PORT resolved to. */
  port: number;
  reload(): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'vc_edge';
const MAINTENANCE_RETRY_SECONDS = 300;

export { maintenancePage };

export async function startEdge(o: EdgeOptions): Promise<Edge> {
  let state: EdgeState = await loadEdgeState(o.knex);
  // Automatic HTTPS: the console's own HTTP-01 answers, and the certificates' files (kept apart: see each).
  const challenges = new AcmeChallenges(o.knex);
  await challenges.load();
  const syncCertificateFiles = CertificateFiles.syncer(o.knex, o.certificateFiles, o.logger);
  await syncCertificateFiles();
  // The CDN: in memory only, so a (re)started edge has nothing a purge made before it could have missed.
  const cache = new CdnCache(o.cacheBytes);
  const purges = new PurgeFollower(o.knex, cache, (err) =>
    o.logger?.warn({ err: err.message }, 'the edge could not check for CDN purges'),
  );
  await purges.start();
  const listeners = new Map<number, { server: http.Server; sockets: Set<net.Socket> }>();
  const agents = new Map<string, http.Agent>();
  const balancer = new Balancer();
  let closed = false;
  const shipper = o.logs
    ? await new LogShipper({ ...o.logs, knex: o.knex, source: 'requests', logger: o.logger }).start()
    : null;

  const agentFor = (host: string, port: number) => {
    const key = `${host}:${port}`;
    let agent = agents.get(key);
    if (!agent) agents.set(key, (agent = new http.Agent({ keepAlive: true, maxSockets: 256 })));
    return agent;
  };

  /**
   * Forwards to one of the route's instances (balance.ts). One that refuses is skipped for a while and, for
   * requests without a body, the route is read again (it may have changed a moment ago) and another tried.
   * `sticky`: the environment keeps clients on an instance (the cookie's token, '' without one).
   * `pending`: a CDN entry to fill from the answer, when it may be cached.
   */
  function forward(
    envId: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: EdgeRoute,
    tried: Set<string>,
    extra: string[],
    sticky: string | null,
    pending: PendingStore | null = null,
  ): void {
    if (route.kind === 'unavailable') {
      req.resume();
      return failed(envId, res, 503, route.text, extra);
    }
    const target = balancer.pick(envId, route.upstreams, { token: sticky ?? undefined, exclude: tried });
    if (!target) return failed(envId, res, 502, 'bad gateway: the web process is not answering', extra);
    const token = sticky === null ? null : stickyToken(envId, target.id);
    const headersOut = token && token !== sticky ? [...extra, 'set-cookie', setStickyCookie(token)] : extra;
    const release = balancer.acquire(target);
    const upstream = http.request({
      host: target.host,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: forwardHeaders(req),
      agent: agentFor(target.host, target.port),
    });
    upstream.on('response', (up) => {
      const status = up.statusCode ?? 502;
      const headers = responseHeaders(up.rawHeaders);
      const ttl = pending && req.method === 'GET' ? cacheLifetime(status, up.headers, pending.defaultTtl) : null;
      if (ttl !== null && pending) cache.keep(pending, req, up, headers, ttl, () => purges.fresh());
      const answer = { status, statusMessage: up.statusMessage, headers, parsed: up.headers, body: up };
      writeAnswer(req, res, answer, headersOut, projectRulesOf(envId)?.compression ?? false);
      up.on('error', () => res.destroy());
    });
    upstream.on('error', () => {
      release();
      if (res.headersSent) return void res.destroy();
      balancer.markDead(target);
      tried.add(Balancer.key(target));
      if (hasBody(req) || tried.size > route.upstreams.length)
        return failed(envId, res, 502, 'bad gateway: the web process is not answering', extra);
      // The route may have changed a moment ago: read it again and try another instance.
      loadRoute(o.knex, envId)
        .then((fresh) => {
          const next = fresh ?? { kind: 'unavailable' as const, text: 'no release is live' };
          if (fresh) state.routes.set(envId, fresh);
          forward(envId, req, res, next, tried, extra, sticky, pending);
        })
        .catch(() => failed(envId, res, 502, 'bad gateway: the web process is not answering', extra));
    });
    res.on('close', () => {
      release();
      if (!res.writableFinished) upstream.destroy();
    });
    if (hasBody(req)) req.pipe(upstream);
    else upstream.end();
  }

  const trustHops = o.trustProxyHops ?? 0;
  const rates = new RateWindows();
  const projectRulesOf = (envId: string): ProjectRules | undefined => {
    const projectId = state.projectOf.get(envId);
    return projectId ? state.projectRules.get(projectId) : undefined;
  };

  /** An answer of the edge's own when no web process can answer: the project's error page, if it has one. */
  function failed(envId: string, res: http.ServerResponse, status: number, text: string, extra: string[]): void {
    const page = projectRulesOf(envId)?.errorPage;
    if (res.headersSent) return void res.destroy();
    const headers: Record<string, string> = {};
    for (let i = 0; i + 1 < extra.length; i += 2) headers[extra[i]] = extra[i + 1];
    if (!page) return plain(res, status, text, headers);
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers });
    res.end(page);
  }

  const passwords = new PasswordChecks();

  function serve(envId: string | undefined, req: http.IncomingMessage, res: http.ServerResponse): void {
    if (!envId) {
      req.resume();
      return plain(res, 404, 'no site is served at this address');
    }
    const address = clientAddress(req, trustHops);
    const project = projectRulesOf(envId);
    if (project) {
      if (project.blocked?.(address) || blockedAgent(req.headers['user-agent'], project.agents)) {
        req.resume();
        return plain(res, 403, 'forbidden');
      }
      if (project.rateLimit) {
        const wait = rates.hit(`${state.projectOf.get(envId)}|${address}`, project.rateLimit);
        if (wait !== null) {
          req.resume();
          return plain(res, 429, 'too many requests; slow down', { 'retry-after': String(wait) });
        }
      }
    }
    const rules = state.rules.get(envId);
    if (rules?.allowed && !rules.allowed(address)) {
      req.resume();
      return plain(res, 403, 'forbidden: your address may not reach this site');
    }
    if (rules?.password) {
      const want = rules.password;
      void passwords.ok(envId, req, want).then(
        (ok) => {
          if (!ok) {
            req.resume();
            return plain(res, 401, 'this site needs a username and password', {
              'www-authenticate': 'Basic realm="site", charset="UTF-8"',
            });
          }
          admit(envId, rules, req, res);
        },
        () => plain(res, 502, 'bad gateway'),
      );
      return;
    }
    admit(envId, rules, req, res);
  }

  function admit(
    envId: string,
    rules: EnvironmentRules | undefined,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): void {
    const extra: string[] = [];
    const hsts = projectRulesOf(envId)?.hsts;
    if (hsts && isHttps(req, trustHops)) extra.push('strict-transport-security', hstsValue(hsts));
    const maintenance = state.maintenance.get(envId);
    if (maintenance) {
      req.resume();
      res.writeHead(503, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'retry-after': String(MAINTENANCE_RETRY_SECONDS),
      });
      return void res.end(maintenancePage(projectRulesOf(envId)?.maintenancePage ?? null, maintenance.note));
    }
    const route = state.routes.get(envId) ?? { kind: 'unavailable' as const, text: 'no release is live' };
    const sticky = rules?.stickiness ? (stickyCookie(req) ?? '') : null;
    const cdn = state.cdn.get(envId);
    if (!cdn || (req.method !== 'GET' && req.method !== 'HEAD') || req.headers.range || hasBody(req))
      return forward(envId, req, res, route, new Set(), extra, sticky);
    const hit = purges.fresh() ? cache.lookup(envId, req) : undefined;
    if (hit) {
      req.resume();
      const age = String(Math.max(0, Math.floor((Date.now() - hit.storedAt) / 1000)));
      extra.push('x-cache', 'HIT', 'age', age);
      return writeAnswer(req, res, hit, extra, projectRulesOf(envId)?.compression ?? false);
    }
    extra.push('x-cache', 'MISS');
    forward(envId, req, res, route, new Set(), extra, sticky, cache.begin(envId, req, cdn.defaultTtl));
  }

  type Picker = (req: http.IncomingMessage) => string | undefined;
  async function listen(port: number, pick: Picker, acme = false): Promise<http.Server> {
    const sockets = new Set<net.Socket>();
    const server = http.createServer((req, res) => {
      const next = () => {
        const envId = pick(req);
        if (shipper && envId) trackRequest(shipper, envId, req, res, clientAddress(req, trustHops));
        serve(envId, req, res);
      };
      // EDGE_PORT: the console's own ACME challenges first, before any environment rule.
      const host = acme ? hostOf(req) : '';
      if (acme && challenges.handle(req, res, host, state.domains.has(host), next)) return;
      next();
    });
    server.keepAliveTimeout = 5000;
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    server.on('upgrade', (req, socket, head) => {
      const envId = pick(req);
      const route = envId ? state.routes.get(envId) : undefined;
      const sticky = envId && state.rules.get(envId)?.stickiness ? stickyCookie(req) : undefined;
      const target =
        envId && route?.kind === 'upstream' ? balancer.pick(envId, route.upstreams, { token: sticky }) : null;
      tunnel(target, req, socket as net.Socket, head, sockets);
    });
    server.on('clientError', (_err, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, o.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    listeners.set((server.address() as net.AddressInfo).port, { server, sockets });
    return server;
  }

  function stop(port: number): void {
    const l = listeners.get(port);
    if (!l) return;
    listeners.delete(port);
    l.server.close();
    l.server.closeAllConnections();
    for (const s of l.sockets) s.destroy();
  }

  const edgeServer = await listen(o.edgePort, (req) => state.domains.get(hostOf(req)), true);
  const edgePort = (edgeServer.address() as net.AddressInfo).port;

  /** Listens on every environment's port, and stops listening on ports no environment has any more. */
  async function reconcile(): Promise<void> {
    for (const port of [...listeners.keys()]) if (port !== edgePort && !state.envByPort.has(port)) stop(port);
    for (const port of state.envByPort.keys()) {
      if (listeners.has(port)) continue;
      try {
        await listen(port, () => state.envByPort.get(port));
      } catch (err) {
        o.logger?.warn(
          { port, err: (err as Error).message },
          'the edge cannot listen on an environment port yet; retrying in a second',
        );
        if (!retry && !closed) {
          retry = setTimeout(() => {
            retry = null;
            void reload().catch(() => undefined);
          }, 1000);
          retry.unref();
        }
      }
    }
  }
  let retry: NodeJS.Timeout | null = null;

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
        state = await loadEdgeState(o.knex);
        await challenges.load();
        if (!closed) await reconcile();
        await syncCertificateFiles();
      } while (again && !closed);
    })().finally(() => {
      reloading = null;
    });
    return reloading;
  }
  await reconcile();

  // LISTEN on a connection of its own, reconnected when it drops (then reloaded: changes may have been missed).
  let client: pg.Client | null = null;
  async function subscribe(): Promise<void> {
    while (!closed) {
      const c = new pg.Client({ connectionString: o.databaseUrl });
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
    reload,
    async close() {
      closed = true;
      clearInterval(timer);
      if (retry) clearTimeout(retry);
      await reloading?.catch(() => undefined);
      await client?.end().catch(() => undefined);
      await purges.close();
      for (const port of [...listeners.keys()]) stop(port);
      for (const a of agents.values()) a.destroy();
      await shipper?.close();
    },
  };
}
