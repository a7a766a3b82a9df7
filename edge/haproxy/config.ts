/**
 * haproxy.cfg from the model (model.ts). One frontend binds EDGE_PORT and the whole ENVIRONMENT_PORTS range
 * (one range bind); the environment is found by `dst_port` (ports.map) or, on EDGE_PORT, by Host
 * (domains.map). The rules of CONTRACT "The edge" run in the frontend, in the Node edge's order, for every
 * request (upgrades included): blocked addresses and agents (project), the rate limit (one stick table, the
 * window a variable), allowed addresses (environment), then maintenance; HSTS on HTTPS answers; then the
 * port's backend (`p<port>`: least connections, health checks, SCALE_MAX slots, the `vc_instance` cookie when
 * the environment is sticky), or through a loopback hop (hops.ts: be_gz when its project compresses, the CDN
 * tier, be_err when its project has an error page). Everything an environment or a project sets lives in map
 * and ACL files (runtime API), its pages included (pages.ts): none of it reloads HAProxy.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { aclFile, backendName, type EdgeModel, mapFile, serverName, slotCookie } from './model';
import type { HaproxyPaths } from './paths';
import { heldPortsLine } from './held-ports';
import { rateLimitRules, rateLimitTables } from './rate-limit';
import { PAGES_LUA } from './pages';
import { BUFSIZE } from './buffer';
import { EDGE_ERROR, hopRoutes, hopSections, hopVariables, NOT_RETRIED } from './hops';

/** Lines other parts of the edge add to the configuration (the password check, the request log, ...). */
export interface ConfigFragments {
  /** In `global`. */
  global?: string[];
  /**
   * First in the frontend once the environment and the client are known (txn.env, txn.p, txn.client set),
   * before any rule that refuses, answers or redirects (the request log).
   */
  frontendStart?: string[];
  /** In the frontend after the address and rate rules, before maintenance (the password). */
  frontend?: string[];
  /** Before the frontend's own `use_backend` lines. */
  useBackend?: string[];
  /** Whole sections (backends, rings, tables) appended. */
  sections?: string[];
}

export interface ConfigOptions {
  paths: HaproxyPaths;
  /** ENVIRONMENT_BIND. */
  host: string;
  edgePort: number;
  /** ENVIRONMENT_PORTS: bound as one range, one backend per port. */
  environmentPorts: { from: number; to: number };
  /** Ports of the range another program holds: left out of the bind (tried again by the control plane). */
  heldPorts?: number[];
  /** Server slots per backend (SCALE_MAX, model.slotsFor). */
  slots: number;
  trustProxyHops: number;
  /** What one client address may hold: concurrent connections, new connections per 10 s (a stick table). */
  perAddress: { connections: number; connectionRate: number };
  /** HAProxy's threads (EDGE_THREADS); unset: one per core. */
  threads?: number;
  /**
   * HTTPS (CONTRACT "Certificates"): EDGE_TLS_PORT with the certificates' crt-list (SNI) and a self-signed
   * default certificate, and the port named in the 308 redirects (EDGE_TLS_PUBLIC_PORT).
   */
  tls?: { port: number; publicPort: number; crtList: string; defaultCert: string };
  /** The CDN tier (Varnish at 127.0.0.1:port; it fetches misses from fe_origin on 127.0.0.1:originPort). */
  cdn?: { port: number; originPort: number };
  /** Called with the data plane's paths (map and ACL files are under `paths.dir`: `maps/`, `acls/`). */
  fragments?: (paths: HaproxyPaths) => ConfigFragments;
}

/** EDGE_CONNECTIONS_PER_ADDRESS and EDGE_CONNECTION_RATE_PER_ADDRESS (new connections per 10 s) unset. */
export const DEFAULT_PER_ADDRESS = { connections: 100, connectionRate: 200 };
/**
 * Connections: the process's own (`global maxconn`: 10,000, or what the open-files limit HAProxy inherits
 * allows, two descriptors a connection), and each bind's, below it (EDGE_PORT and EDGE_TLS_PORT: 40 %,
 * an environment's port: 10 %), so no one port (one tenant's, or the domains') takes every slot of the process.
 * `descriptors`: what HAProxy holds besides connections (a listener per port, a health check per server).
 */
function connectionLimits(
  descriptors: number,
  openFiles = openFilesLimit(),
): { total: number; domains: number; env: number } {
  const total = Math.max(100, Math.min(10_000, Math.floor((openFiles - 500 - descriptors) / 2)));
  return { total, domains: Math.floor(total * 0.4), env: Math.floor(total * 0.1) };
}

/** The hard limit of open files of this process (HAProxy's master inherits it), from /proc/self/limits. */
function openFilesLimit(): number {
  try {
    const line = /^Max open files\s+\S+\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    const n = Number(line?.[1]);
    return Number.isFinite(n) ? n : 1_048_576; // "unlimited"
  } catch {
    return 20_000;
  }
}
/** The stick table of the client addresses' connections (conn_cur, conn_rate over 10 s). */
const ADDRESS_TABLE = 'vc_addresses';
/** The ranges of `from-to` without `held`, as bind addresses. */
function rangeAddresses(host: string, from: number, to: number, held: number[] = []): string[] {
  const out: string[] = [];
  let start = from;
  for (const port of [...new Set(held)].filter((p) => p >= from && p <= to).sort((a, b) => a - b)) {
    if (port > start) out.push(port - 1 > start ? `${host}:${start}-${port - 1}` : `${host}:${start}`);
    start = port + 1;
  }
  if (start <= to) out.push(to > start ? `${host}:${start}-${to}` : `${host}:${start}`);
  return out;
}

/** The environment ports' bind: none when other programs hold every one of them (each is bound once free). */
const envBind = (addresses: string[], maxconn: number) =>
  addresses.length ? [`  bind ${addresses.join(',')} name envs maxconn ${maxconn}`] : [];

const PLAIN = 'content-type "text/plain; charset=utf-8"';
const NO_STORE = 'hdr Cache-Control no-store';

/**
 * The headers the edge owns. X-Forwarded-For (`option forwardfor`: the client's address), -Proto and -Host are
 * the edge's to set: a client's own are removed, never appended to or kept, unless TRUST_PROXY_HOPS says a
 * proxy in front sets them (then its chain is kept and the edge's peer appended). `Forwarded` says the same
 * and is removed likewise. `Connection:` keeps no header name: the CDN tier (Varnish), as any HTTP/1.1 hop,
 * drops the headers it names, and a client naming X-Forwarded-Proto there took the edge's away; HAProxy
 * manages the connection itself, so only `upgrade` (with an Upgrade header) goes on.
 */
function forwardedHeaders(trustProxyHops: number): string[] {
  return [
    ...(trustProxyHops > 0
      ? []
      : ['X-Forwarded-For', 'X-Forwarded-Proto', 'X-Forwarded-Host', 'Forwarded'].map(
          (name) => `  http-request del-header ${name}`,
        )),
    '  http-request del-header Connection if !{ req.hdr(upgrade) -m found }',
    '  http-request set-header Connection upgrade if { req.hdr(upgrade) -m found }',
  ];
}

/**
 * What one client address may hold: EDGE_CONNECTIONS_PER_ADDRESS at once and EDGE_CONNECTION_RATE_PER_ADDRESS
 * new ones per 10 s (stick table `vc_addresses`, sticky counter 1, tracked for the connection's session). A
 * connection over either is closed as it comes, before any byte is read (only the projects' request-rate limit
 * answers 429). With TRUST_PROXY_HOPS > 0 every peer is the trusted proxy in front, which carries many
 * clients: no limit applies to its address.
 */
function perAddressLimits(o: ConfigOptions): string[] {
  if (o.trustProxyHops > 0) return [];
  return [
    `  tcp-request connection track-sc1 src table ${ADDRESS_TABLE}`,
    `  tcp-request connection reject if { sc1_conn_cur gt ${o.perAddress.connections} } || { sc1_conn_rate gt ${o.perAddress.connectionRate} }`,
  ];
}

/** An answer of the edge's own: `http-request return` or `deny` arguments. */
const own = (status: number, text: string) => `status ${status} ${PLAIN} string "${text}" ${NO_STORE}`;

/**
 * The configuration. `skeleton`: without what the runtime API changes (servers' addresses and states), to
 * tell a structural change (a reload) from one the runtime API makes.
 */
export function renderConfig(model: EdgeModel, o: ConfigOptions, skeleton = false): string {
  const p = o.paths;
  const map = (name: string) => join(p.dir, mapFile(name));
  const acl = (name: string) => join(p.dir, aclFile(name));
  const fragments = o.fragments?.(p) ?? {};
  const out: string[] = [];
  const add = (...lines: string[]) => out.push(...lines);
  const ports = o.environmentPorts.to - o.environmentPorts.from + 1;
  // the edge's own listeners are never also environment ports (a range overlapping them leaves them out)
  const ownPorts = [o.edgePort, o.tls?.port, o.cdn?.originPort].filter((p): p is number => p !== undefined);
  const limits = connectionLimits(ports * (1 + 2 * o.slots));

  add(
    'global',
    `  stats socket ${p.admin} mode 600 level admin expose-fd listeners`,
    `  maxconn ${limits.total}`,
    ...(o.threads ? [`  nbthread ${o.threads}`] : []),
    // a port another process holds fails the start (SO_REUSEPORT would let both serve it); a reload takes the
    // listeners over from the old worker (`expose-fd listeners` above) instead of binding them again
    '  noreuseport',
    `  pidfile ${p.pidfile}`,
    `  tune.bufsize ${BUFSIZE}`,
    // no cache of pattern matches: HAProxy 2.6 keeps a regex's result for a sample across a `commit acl` that only
    // adds to an empty ACL, so a User-Agent seen while a block was being applied stayed let through after it was
    // in force (test/edge/agent-pattern-cache.test.ts). Only the agents ACL is matched by a list (maps are trees)
    '  tune.pattern.cache-size 0',
    // per thread: the error page's filter runs on every request of the hops it is on, with no lock
    `  lua-load-per-thread ${join(p.dir, PAGES_LUA)}`,
    // after a reload, the old worker finishes what it was doing, at most this long
    '  hard-stop-after 60s',
    ...(fragments.global ?? []).map((l) => `  ${l}`),
    '',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 60s',
    '  timeout server 600s',
    // a request's headers in at most 5 s (a slowloris holds a connection that long)
    '  timeout http-request 5s',
    '  timeout http-keep-alive 5s',
    '  timeout tunnel 1h',
    '  timeout client-fin 5s',
    '  option redispatch',
    '  retries 2',
    // a GET sent on a kept-alive connection to an instance that just went away is sent again (this L7 retry
    // keeps a copy of each request: one whole buffer, buffer.ts); only a request safe to send twice
    // (NOT_RETRIED, in each frontend)
    '  retry-on conn-failure empty-response',
    // HAProxy's own, marked: on a hop, the project's error page replaces them (hops.ts); never sent to a client
    `  http-error ${own(502, 'bad gateway: the web process is not answering')} hdr ${EDGE_ERROR} 1`,
    `  http-error ${own(503, 'service unavailable: no web process is answering')} hdr ${EDGE_ERROR} 1`,
    `  http-error ${own(504, 'gateway timeout: the web process did not answer in time')} hdr ${EDGE_ERROR} 1`,
    '',
    'frontend fe_edge',
    `  bind ${o.host}:${o.edgePort} name edge maxconn ${limits.domains}`,
    ...(o.tls
      ? [
          `  bind ${o.host}:${o.tls.port} name tls maxconn ${limits.domains} ssl crt ${o.tls.defaultCert} crt-list ${o.tls.crtList} ssl-min-ver TLSv1.2`,
        ]
      : []),
    // every port of ENVIRONMENT_PORTS, one listener each (maxconn is each one's), whether an environment has it
    // yet or not: an environment added or removed is a map entry
    ...heldPortsLine(o.heldPorts ?? []),
    ...envBind(
      rangeAddresses(o.host, o.environmentPorts.from, o.environmentPorts.to, [...(o.heldPorts ?? []), ...ownPorts]),
      limits.env,
    ),
    ...perAddressLimits(o),
    '  option forwardfor',
    '  option http-ignore-probes',
    // a connection that sent no request (a TLS handshake given up, a port scan) is not a request line
    '  option dontlognull',
    NOT_RETRIED,
    // only the loopback listener of the CDN tier (fe_origin) believes these
    '  http-request del-header X-VC-Env',
    '  http-request del-header X-VC-Default-TTL',
    ...forwardedHeaders(o.trustProxyHops),
    `  acl on_edge_port dst_port ${o.edgePort}`,
    // the environments' ports: by port; EDGE_PORT and the TLS port: by Host
    `  acl by_host dst_port ${o.edgePort}${o.tls ? ` ${o.tls.port}` : ''}`,
    `  http-request set-var(txn.env) dst_port,map_int(${map('ports')}) if !by_host`,
    `  http-request set-var(txn.host) req.hdr(host),lower,regsub(':[0-9]+$',''),regsub('\\.$','') if by_host`,
    // the console's ACME challenges on EDGE_PORT, for their hostname, before any environment rule
    '  acl acme path_beg /.well-known/acme-challenge/',
    '  http-request set-var(txn.path) path if on_edge_port acme',
    `  http-request set-var(txn.acme) var(txn.host),concat(,txn.path),map(${map('acme')}) if on_edge_port acme METH_GET || on_edge_port acme METH_HEAD`,
    `  http-request return status 200 content-type text/plain lf-string "%[var(txn.acme)]" ${NO_STORE} if { var(txn.acme) -m found }`,
    `  http-request set-var(txn.env) var(txn.host),map(${map('domains')}) if by_host`,
    `  http-request return ${own(404, 'no site is served at this address')} if !{ var(txn.env) -m found }`,
    `  http-request set-var(txn.p) var(txn.env),map(${map('env-project')})`,
    '  http-request set-var(txn.client) src',
  );
  if (o.trustProxyHops > 0)
    add(
      `  http-request set-var(txn.client) req.hdr(x-forwarded-for,-${o.trustProxyHops}) if { req.hdr_cnt(x-forwarded-for) ge ${o.trustProxyHops} }`,
      `  http-request set-var(txn.https) bool(true) if { req.hdr(x-forwarded-proto,-1) -m str -i https }`,
    );
  // the request log: every request of an environment from here on (refused, redirected, upgraded or served)
  add(...(fragments.frontendStart ?? []).map((l) => `  ${l}`));
  if (o.tls)
    add(
      // a domain with a certificate: plain HTTP goes to HTTPS (never the ACME path)
      `  http-request redirect location https://%[var(txn.host)]${o.tls.publicPort === 443 ? '' : `:${o.tls.publicPort}`}%[capture.req.uri] code 308 if on_edge_port !acme { var(txn.host),map(${map('certified')}) -m found }`,
      '  http-request set-var(txn.https) bool(true) if { ssl_fc }',
      '  http-request set-header X-Forwarded-Proto https if { ssl_fc }',
    );
  // HSTS: on answers to HTTPS requests only (RFC 6797), the edge's own answers (403, 429, 401, 503) included
  add(
    `  http-request set-var(txn.hsts) var(txn.p),map(${map('hsts')}) if { var(txn.https) -m bool }`,
    '  http-after-response set-header Strict-Transport-Security "%[var(txn.hsts)]" if { var(txn.hsts) -m found }',
    // HAProxy's own errors' marker (above), whichever pass made them
    `  http-after-response del-header ${EDGE_ERROR} if { status 502:504 }`,
  );
  // blocked addresses (the longest listed network holding the client, then whether the project lists it) and
  // agents (one regex per agent on `<project>|<User-Agent>`, for the projects that block some)
  add(
    `  http-request set-var(txn.bn) var(txn.client),map_ip(${map('blocked-net')})`,
    `  http-request deny deny_${own(403, 'forbidden')} if { var(txn.bn) -m found } { var(txn.p),concat(|,txn.bn),map(${map('blocked')}) -m found }`,
    `  http-request set-var(txn.ua) req.fhdr(user-agent) if { var(txn.p),map(${map('agent-projects')}) -m found }`,
    `  http-request deny deny_${own(403, 'forbidden')} if { var(txn.ua) -m found } { var(txn.p),concat(|,txn.ua) -m reg -i -f ${acl('agents')} }`,
  );
  // the rate limit: requests per client address and project in a sliding window
  add(...rateLimitRules(map, `status 429 ${PLAIN} string "too many requests; slow down" ${NO_STORE}`));
  // allowed addresses: an environment with a list answers only the addresses it holds
  add(
    `  http-request set-var(txn.al) var(txn.env),map(${map('allowlisted')})`,
    `  http-request set-var(txn.an) var(txn.client),map_ip(${map('allowed-net')}) if { var(txn.al) -m found }`,
    `  http-request deny deny_${own(403, 'forbidden: your address may not reach this site')} if { var(txn.al) -m found } !{ var(txn.env),concat(|,txn.an),map(${map('allowed')}) -m found }`,
  );
  add(...(fragments.frontend ?? []).map((l) => `  ${l}`));
  // maintenance: the project's page (or the default one) with the note, from pages.map (maintenance-page.ts)
  add(
    `  http-request set-var(txn.maint) var(txn.env),map(${map('maintenance')})`,
    '  http-request use-service lua.vc_maintenance if { var(txn.maint) -m found }',
    // the client's own were removed above (forwardedHeaders), unless a trusted proxy in front set these
    '  http-request set-header X-Forwarded-Proto http if !{ req.hdr(x-forwarded-proto) -m found }',
    '  http-request set-header X-Forwarded-Host "%[req.hdr(host)]" if { req.hdr(host) -m found } !{ req.hdr(x-forwarded-host) -m found }',
  );
  // no release is live (stopped, ...): the environment's backend answers 503 saying why (below)
  add(`  http-request set-var(txn.unavail) var(txn.env),map(${map('unavailable')})`);
  // the CDN tier: GET and HEAD of an environment with the CDN on, after every rule (never an upgrade)
  if (o.cdn)
    add(
      `  http-request set-var(txn.cdn) var(txn.env),map(${map('cdn')}) if METH_GET !{ req.hdr(upgrade) -m found } || METH_HEAD`,
      '  http-request set-header X-VC-Env "%[var(txn.env)]" if { var(txn.cdn) -m found }',
      '  http-request set-header X-VC-Default-TTL "%[var(txn.cdn)]" if { var(txn.cdn) -m found }',
    );
  // the sticky environments' cookie (every backend has it; `ignore-persist` unless the environment is sticky)
  add(`  http-request set-var(txn.sticky) var(txn.env),map(${map('sticky')})`);
  add(`  http-request set-var(txn.gz) var(txn.env),map(${map('compressed')})`);
  if (o.cdn) add(...hopVariables(map));
  add(...(fragments.useBackend ?? []).map((l) => `  ${l}`));
  // the hops (hops.ts): the CDN tier, compression, the error page; they need fe_origin, the CDN tier's listener
  if (o.cdn) add(...hopRoutes());
  add(
    '  use_backend p%[dst_port] if !by_host',
    `  use_backend p%[var(txn.env),map(${map('env-port')})]`,
    '  default_backend be_none',
    '',
  );

  if (o.cdn) add(...hopSections(o.cdn, map));
  add('backend be_none', `  http-request return ${own(404, 'no site is served at this address')}`, '');
  if (o.trustProxyHops === 0)
    add(`backend ${ADDRESS_TABLE}`, '  stick-table type ipv6 size 1m expire 60s store conn_cur,conn_rate(10s)', '');
  add(...rateLimitTables());

  for (let port = o.environmentPorts.from; port <= o.environmentPorts.to; port++) {
    const env = model.envs.get(port);
    add(
      `backend ${backendName(port)}`,
      '  balance leastconn',
      '  cookie vc_instance insert indirect httponly attr "SameSite=Lax"',
      '  ignore-persist unless { var(txn.sticky) -m found }',
    );
    // no release is live: 503 with the project's error page (Lua, pages.ts), or with why (the route's text)
    add(
      `  http-request use-service lua.vc_unavailable if { var(txn.unavail) -m found } { var(txn.env),map(${map('error-page')}) -m found }`,
      `  http-request return status 503 ${PLAIN} lf-string "%[var(txn.unavail),b64dec]" ${NO_STORE} if { var(txn.unavail) -m found }`,
    );
    // a refused connection marks the instance down at once; checks bring it back
    add('  default-server check inter 2s fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down');
    for (let i = 0; i < o.slots; i++) {
      const slot = env?.slots[i];
      for (const side of ['a', 'b'] as const) {
        const name = serverName(i, side);
        const cookie = `cookie ${slotCookie(port, i)}`;
        if (skeleton) {
          add(`  server ${name} ${cookie}`);
          continue;
        }
        const addr = slot?.[side];
        const serving = slot?.on && slot.active === side && addr;
        add(
          `  server ${name} ${addr ? `${addr.host}:${addr.port}` : '127.0.0.1:1'} ${cookie}${serving ? '' : ' disabled'}`,
        );
      }
    }
    add('');
  }
  add(...(fragments.sections ?? []));
  return `${out.join('\n')}\n`;
}
