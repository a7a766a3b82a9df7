/**
 * The one outbound guard for every connection made for a tenant (repositories; later webhooks, log
 * destinations, S3 endpoints, registries): CONTRACT "Running". A tenant's address may reach only public
 * unicast addresses. Loopback, link-local, private, unique-local, CGNAT, multicast, unspecified, reserved
 * and the IPv4-mapped/embedded IPv6 forms of those are refused, unless the host name, the address or a
 * CIDR containing it is listed in OUTBOUND_ALLOWED_HOSTS.
 *
 * The check runs on the addresses DNS gives (not on the name), and the connection must then use exactly
 * those addresses: `checkOutboundHost` returns them for pinning (git: http.curloptResolve, ssh HostName),
 * and `guardedLookup` / `outboundRequest` check inside the connection's own DNS lookup and on every
 * redirect, so a name that resolves differently between check and connect (DNS rebinding) does not pass.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Config } from '../system/config';
import { HOST_NAME, parseAllowList, type AllowList } from '../system/allow-list';

export type OutboundConfig = Pick<Config, 'outboundAllowedHosts'>;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

type OutboundRefusalReason = 'internal_address' | 'unresolvable' | 'invalid_host';

/** A connection the guard will not make; `message` is a phrase fit for `error.fields` and task logs. */
export class OutboundRefused extends Error {
  constructor(
    readonly reason: OutboundRefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

const INTERNAL =
  'resolves to a loopback, private, link-local or otherwise internal address (an operator may list the host in OUTBOUND_ALLOWED_HOSTS)';

const parsedLists = new WeakMap<readonly string[], AllowList>();
function allowListOf(config: OutboundConfig): AllowList {
  let list = parsedLists.get(config.outboundAllowedHosts);
  if (!list) {
    list = parseAllowList(config.outboundAllowedHosts);
    parsedLists.set(config.outboundAllowedHosts, list);
  }
  return list;
}

/** `[::1]` -> `::1`, lower case, no trailing dot. */
export function normalizeHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** True when the address is public unicast, or listed (itself or by CIDR) in the allow list. */
function addressAllowed(address: string, list: AllowList): boolean {
  let addr: Address;
  try {
    addr = ipaddr.parse(address);
  } catch {
    return false;
  }
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress())
    addr = (addr as ipaddr.IPv6).toIPv4Address();
  if (list.cidrs.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits))) return true;
  return addr.range() === 'unicast';
}

/**
 * Resolves `host` (a name or an address literal) and checks every address it gives. Returns the
 * addresses the connection must use; throws OutboundRefused when any of them is internal and not
 * allowed (one internal answer among public ones is still refused: the client would pick any).
 */
export async function checkOutboundHost(host: string, config: OutboundConfig): Promise<string[]> {
  const name = normalizeHost(host);
  if (!name || (!ipaddr.isValid(name) && !HOST_NAME.test(name))) {
    throw new OutboundRefused('invalid_host', 'has a host name that is not valid');
  }
  const list = allowListOf(config);
  let addresses: string[];
  if (ipaddr.isValid(name)) {
    addresses = [ipaddr.parse(name).toString()];
  } else {
    try {
      addresses = (await dnsLookup(name, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      throw new OutboundRefused('unresolvable', 'has a host name that does not resolve');
    }
    if (addresses.length === 0) throw new OutboundRefused('unresolvable', 'has a host name that does not resolve');
  }
  if (list.hosts.has(name)) return addresses;
  if (!addresses.every((a) => addressAllowed(a, list))) throw new OutboundRefused('internal_address', INTERNAL);
  return addresses;
}

/** Checks the host of an absolute URL; returns the parsed URL and the addresses to connect to. */
export async function checkOutboundUrl(
  url: string | URL,
  config: OutboundConfig,
): Promise<{ url: URL; addresses: string[] }> {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    throw new OutboundRefused('invalid_host', 'is not a valid URL');
  }
  return { url: parsed, addresses: await checkOutboundHost(parsed.hostname, config) };
}

/**
 * A `lookup` for net/http/https (and any client taking one) that refuses internal addresses at connect
 * time, after DNS resolution: what the socket connects to is exactly what was checked.
 */
export function guardedLookup(config: OutboundConfig): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number }, callback: (...args: unknown[]) => void) => {
    checkOutboundHost(hostname, config).then(
      (addresses) => {
        const entries = addresses
          .map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
          .filter((e) => !options?.family || e.family === options.family);
        if (entries.length === 0)
          return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
        if (options?.all) return callback(null, entries);
        callback(null, entries[0].address, entries[0].family);
      },
      (err) => callback(err),
    );
  }) as LookupFunction;
}

interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
}

interface OutboundRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  /** A list of Buffers is sent one after the other, with their length (no copy into one). */
  body?: string | Buffer | Buffer[];
  timeoutMs?: number;
  /** Redirects followed (each one checked again); default 5, 0 returns the 3xx as it is. */
  maxRedirects?: number;
  /** Largest body read (default 1 MiB); more is cut off. */
  maxBytes?: number;
  /**
   * Keep-alive agents (a caller that sends often, such as the log shipper): a connection, checked when it was made,
   * carries the next requests to the same origin, and a request whose reused connection was reset is sent once
   * more on a new one. Default: a connection of its own for each request.
   */
  agents?: { http: http.Agent; https: https.Agent };
}

/**
 * An HTTP(S) request for a tenant through the guard: the target is checked after DNS resolution (in the
 * socket's own lookup), and every redirect is checked the same way before it is followed. Only http and
 * https; a redirect turns POST into GET as browsers do (303, and 301/302 after POST).
 */
export async function outboundRequest(
  url: string,
  opts: OutboundRequestOptions,
  config: OutboundConfig,
): Promise<OutboundResponse> {
  const lookup = guardedLookup(config);
  let current = new URL(url);
  let method = (opts.method ?? 'GET').toUpperCase();
  let body = opts.body;
  for (let hop = 0; ; hop++) {
    if (current.protocol !== 'http:' && current.protocol !== 'https:') {
      throw new OutboundRefused('invalid_host', 'is not an http(s) URL');
    }
    await checkOutboundUrl(current, config);
    const request = {
      method,
      headers: opts.headers,
      body,
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxBytes: opts.maxBytes ?? 1 << 20,
    };
    const agent = opts.agents?.[current.protocol === 'https:' ? 'https' : 'http'];
    const res = await once(current, { ...request, agent }, lookup).catch((err: Error & { reusedSocket?: boolean }) => {
      // a kept-alive connection the server closed as it was reused (its idle timeout): sent once more on a new one,
      // Node's documented retry for `reusedSocket`. Usually the server never read it; a caller that passes agents
      // accepts that it may get a request twice (the shipper's batches: a failed one is sent again anyway)
      if (!err.reusedSocket || (err as NodeJS.ErrnoException).code !== 'ECONNRESET') throw err;
      return once(current, { ...request, agent, fresh: true }, lookup);
    });
    const location = res.headers.location;
    if (res.status >= 300 && res.status < 400 && location && hop < (opts.maxRedirects ?? 5)) {
      current = new URL(location, current);
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
      continue;
    }
    return { ...res, url: current.toString() };
  }
}

function once(
  url: URL,
  opts: {
    method: string;
    headers?: Record<string, string>;
    body?: string | Buffer | Buffer[];
    timeoutMs: number;
    maxBytes: number;
    agent?: http.Agent;
    /** A new connection even with an agent (its reused one was reset). */
    fresh?: boolean;
  },
  lookup: LookupFunction,
): Promise<Omit<OutboundResponse, 'url'>> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const parts = Array.isArray(opts.body) ? opts.body : null;
    const headers = parts
      ? { ...opts.headers, 'content-length': String(parts.reduce((n, b) => n + b.length, 0)) }
      : opts.headers;
    const req = client.request(
      url,
      { method: opts.method, headers, lookup, agent: (!opts.fresh && opts.agent) || false, timeout: opts.timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < opts.maxBytes) chunks.push(chunk.subarray(0, opts.maxBytes - size));
          size += chunk.length;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('the request timed out')));
    req.on('error', (err) => reject(Object.assign(err, { reusedSocket: req.reusedSocket })));
    if (parts) {
      for (const b of parts) req.write(b);
      req.end();
    } else req.end(opts.body);
  });
}
