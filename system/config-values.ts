/**
 * How each setting's text is read and checked (system/config.ts's loadConfig): numbers, hours, lists, addresses,
 * directories and the sandboxes' block. Each throws with the setting's name and what is wrong.
 */
import { hostname } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { parseAllowList } from './allow-list';

/** ACME_DIRECTORY_URL: an https URL (RFC 8555 requires TLS). */
export function acmeDirectory(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`ACME_DIRECTORY_URL must be a URL, got "${raw}"`);
  }
  if (url.protocol !== 'https:') throw new Error(`ACME_DIRECTORY_URL must be an https URL, got "${raw}"`);
  return url.href;
}

export function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative whole number, got "${raw}"`);
  return n;
}

/** A whole hour of the day, 0-23. */
export function hourOfDay(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const hour = int(env, name, fallback);
  if (hour > 23) throw new Error(`${name} must be an hour from 0 to 23, got "${env[name]}"`);
  return hour;
}

/** DNS_SERVERS: comma-separated `ip` or `ip:port` (`[v6]:port`); empty: the system's resolvers. */
export function dnsServers(raw: string | undefined): string[] | undefined {
  const list = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of list) {
    if (!/^(\d{1,3}(\.\d{1,3}){3}(:\d+)?|\[[0-9a-f:]+\](:\d+)?|[0-9a-f:]+)$/i.test(s)) {
      throw new Error(`DNS_SERVERS must be comma-separated addresses (ip or ip:port), got "${s}"`);
    }
  }
  return list.length ? list : undefined;
}

/** STORAGE_ROOTS: absolute directories, distinct; unset: one root, DATA_DIR/storage. */
export function storageRoots(raw: string | undefined, dataDir: string): string[] {
  const roots = [...new Set(list(raw).map((dir) => resolve(dir)))];
  return roots.length > 0 ? roots : [resolve(dataDir, 'storage')];
}

/** A setting that is `s3://bucket/prefix` or a directory (PITR_REPOSITORY, RELEASE_STORE); unset: `fallback`. */
function s3OrDirectory(name: string, raw: string | undefined, fallback: string): string {
  if (!raw) return resolve(fallback);
  if (raw.startsWith('s3://')) {
    if (!/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[^\s]*)?$/.test(raw))
      throw new Error(`${name} must be a directory or s3://bucket/prefix, got "${raw}"`);
    return raw.replace(/\/+$/, '');
  }
  return resolve(raw);
}

/** PITR_REPOSITORY: `s3://bucket/prefix`, or a directory (default DATA_DIR/pitr). */
export const pitrRepository = (raw: string | undefined, dataDir: string) =>
  s3OrDirectory('PITR_REPOSITORY', raw, resolve(dataDir, 'pitr'));

/** RELEASE_STORE: `s3://bucket/prefix`, or a directory (default DATA_DIR/releases). */
export const releaseStoreLocation = (raw: string | undefined, dataDir: string) =>
  s3OrDirectory('RELEASE_STORE', raw, resolve(dataDir, 'releases'));

/** A comma-separated setting: trimmed, empty entries dropped. */
export function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** OUTBOUND_ALLOWED_HOSTS, each entry checked now (a typo fails at start, not at the first connection). */
export function allowedHosts(raw: string | undefined): string[] {
  const entries = list(raw);
  parseAllowList(entries);
  return entries;
}

/** Comma-separated absolute directories (SANDBOX_SHARED_DIRS). */
export function sharedDirs(raw: string | undefined): string[] {
  const dirs = (raw ?? '')
    .split(',')
    .map((d) => d.trim())
    .filter(Boolean);
  for (const d of dirs)
    if (!isAbsolute(d)) throw new Error(`SANDBOX_SHARED_DIRS must list absolute directories, got "${d}"`);
  return dirs.map((d) => resolve(d));
}

/** HOST_NAME: letters, digits, '.', '_' and '-' (63 at most); unset: the machine's hostname. */
export function hostNameOf(raw: string | undefined): string {
  const name = raw?.trim() || hostname();
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name))
    throw new Error(`HOST_NAME must be letters, digits, '.', '_' or '-' (63 at most), got "${name}"`);
  return name;
}

export const DEFAULT_SANDBOX_NETWORK = '10.200.0.0/14';

/**
 * SANDBOX_NETWORK: an IPv4 block `a.b.c.d/p` with p <= 14 (a /30 for each of the 65536 ports), its address the
 * block's first. Throws with what is wrong.
 */
export function parseSandboxNetwork(cidr: string): { base: number; cidr: string } {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr.trim());
  const octets = m ? m.slice(1, 5).map(Number) : [];
  const prefix = m ? Number(m[5]) : Number.NaN;
  if (!m || octets.some((o) => o > 255) || prefix > 32)
    throw new Error(`SANDBOX_NETWORK must be an IPv4 block such as 10.200.0.0/14, got "${cidr}"`);
  if (prefix > 14)
    throw new Error(`SANDBOX_NETWORK must be a /14 or larger (a /30 for each port 0-65535), got "${cidr}"`);
  const base = ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  if ((base & mask) >>> 0 !== base)
    throw new Error(`SANDBOX_NETWORK must name its block's first address, got "${cidr}"`);
  return { base, cidr: cidr.trim() };
}

/** CONTROL_PLANE_BIND: an IPv4 address of this machine (default 127.0.0.1), or 0.0.0.0 for every one. */
export function controlPlaneBindOf(raw: string | undefined): string {
  const value = raw?.trim() || '127.0.0.1';
  const octets = value.split('.');
  if (octets.length !== 4 || !octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) <= 255))
    throw new Error(`CONTROL_PLANE_BIND must be an IPv4 address of this machine (or 0.0.0.0), got "${raw}"`);
  return value;
}
