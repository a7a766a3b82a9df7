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
import net from 'node:net';
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
import { blockedAgent, clientAddress, compressorFor, hstsValue, isHttps, passwordChecker, RateWindows } from './rules';
import { hasBody, hostOf, MAINTENANCE_RETRY_SECONDS, maintenancePage, plain } from './answers';
import { Balancer, setStickyCookie, stickyCookie, stickyToken } from './balance';

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
}

export interface Edge {
  /** The port EDGE_PORT resolved to. */
  port: number;
  reload(): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'vc_edge';
export async function startEdge(o: EdgeOptions): Promise<Edge> {
  let state: EdgeState = await loadEdgeState(o.knex);
  const listeners = new Map<number, { server: http.Server; sockets: Set<net.Socket> }>();
  const agents = new Map<string, http.Agent>();
  const balancer = new Balancer();
  let closed = false;

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
   */
  function forward(
    envId: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: EdgeRoute,
    tried: Set<string>,
    extra: string[],
    sticky: string | null,
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
      const rules = projectRulesOf(envId);
      const zip = rules?.compression ? compressorFor(req, status, up.headers) : null;
      let headers = [...responseHeaders(up.rawHeaders), ...headersOut];
      if (zip) {
        headers = headers.filter((_, i, all) => !['content-length', 'vary'].includes(all[i - (i % 2)].toLowerCase()));
        const vary = up.headers.vary ? `${up.headers.vary}, Accept-Encoding` : 'Accept-Encoding';
        headers.push('content-encoding', zip.encoding, 'vary', vary);
      }
      res.writeHead(status, up.statusMessage, headers);
      if (zip) up.pipe(zip.stream).pipe(res);
      else up.pipe(res);
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
          forward(envId, req, res, next, tried, extra, sticky);
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

  const passwordOk = passwordChecker();

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
      void passwordOk(envId, req, want).then(
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
    forward(
      envId,
      req,
      res,
      state.routes.get(envId) ?? { kind: 'unavailable', text: 'no release is live' },
      new Set(),
      extra,
      rules?.stickiness ? (stickyCookie(req) ?? '') : null,
    );
  }

  function upgrade(
    envId: string | undefined,
    req: http.IncomingMessage,
    socket: net.Socket,
    head: Buffer,
    sockets: Set<net.Socket>,
  ): void {
    const route = envId ? state.routes.get(envId) : undefined;
    if (route?.kind !== 'upstream') {
      socket.end(
        'HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nunavailable\n',
      );
      return;
    }
    const sticky = state.rules.get(envId!)?.stickiness ? stickyCookie(req) : undefined;
    const target = balancer.pick(envId!, route.upstreams, { token: sticky });
    if (!target) return void socket.destroy();
    const up = net.connect(target.port, target.host);
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    up.on('connect', () => {
      let text = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (const [name, value] of Object.entries(forwardHeaders(req, true))) {
        for (const v of Array.isArray(value) ? value : [value]) text += `${name}: ${v}\r\n`;
      }
      up.write(`${text}\r\n`);
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    const bail = () => {
      up.destroy();
      socket.destroy();
    };
    up.on('error', bail);
    socket.on('error', bail);
  }

  async function listen(port: number, pick: (req: http.IncomingMessage) => string | undefined): Promise<http.Server> {
    const sockets = new Set<net.Socket>();
    const server = http.createServer((req, res) => serve(pick(req), req, res));
    server.keepAliveTimeout = 5000;
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    server.on('upgrade', (req, socket, head) => upgrade(pick(req), req, socket as net.Socket, head, sockets));
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

  const edgeServer = await listen(o.edgePort, (req) => state.domains.get(hostOf(req)));
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
        if (!closed) await reconcile();
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
        c.on('notification', () => void reload().catch(() => undefined));
        await c.query(`LISTEN ${CHANNEL}`);
        client = c;
        c.on('error', () => {
          client = null;
          void c.end().catch(() => undefined);
          if (!closed) setTimeout(() => void subscribe(), 1000);
        });
        await reload();
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
      for (const port of [...listeners.keys()]) stop(port);
      for (const a of agents.values()) a.destroy();
    },
  };
}
