/**
 * Where a tenant's repository may be: what a client sends is split into the URL kept (no credentials in
 * it) and the credentials (kept sealed elsewhere), and before every git call the location is checked
 * again and pinned:
 * - a local path or `file://` URL only under a directory of LOCAL_REPOSITORY_ROOTS and never inside
 *   DATA_DIR, both on the real path (symlinks, `..`, a `.git` file or link, alternates); git gets the
 *   real path, so nothing can be swapped in between;
 * - http(s), ssh and git:// hosts through the outbound guard (outbound.ts), and git is made to connect
 *   to exactly the addresses checked (curl's resolve list, ssh's HostName, a rewritten git:// URL).
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ipaddr from 'ipaddr.js';
import type { Config } from '../system/config';
import { checkOutboundHost, normalizeHost, OutboundRefused } from './outbound';

export type GitAccess = Pick<Config, 'dataDir' | 'localRepositoryRoots' | 'outboundAllowedHosts'>;

export interface Credentials {
  username: string;
  password: string;
}

/** A repository as git is given it: the URL without credentials, the credentials apart. */
export interface GitRepo {
  url: string;
  credentials?: Credentials | null;
  /** An OpenSSH private key for ssh URLs (a team's repository host); written to a 0600 file per git call. */
  sshKey?: string | null;
  /** Whose mirror (a project id): mirrors are not shared between projects. */
  scope?: string;
}

type RemoteKind = 'local' | 'http' | 'ssh' | 'git';

type ParsedRepositoryUrl =
  | { ok: true; url: string; credentials: Credentials | null; kind: RemoteKind }
  | { ok: false; reason: string };

/** A location git must not be run on; `message` is a phrase for `error.fields.url` and task logs. */
export class LocationRefused extends Error {
  constructor(
    message: string,
    /** Under a root, but nothing is there: an honest "not found" rather than a refusal. */
    readonly notFound = false,
  ) {
    super(message);
    this.name = 'LocationRefused';
  }
}

const SCHEMES: Record<string, Exclude<RemoteKind, 'local'> | undefined> = {
  http: 'http',
  https: 'http',
  ssh: 'ssh',
  'git+ssh': 'ssh',
  'ssh+git': 'ssh',
  git: 'git',
};
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
// scp-like syntax: [user@]host:path, no slash before the first colon (git's own rule).
const SCP = /^(?:([^@/:]+)@)?(\[[0-9a-f:.]+\]|[^@/:[\]]+):(.*)$/i;

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The host as written in a URL's authority must be the host the URL parser reads (no tricks git reads otherwise). */
function rawHost(input: string): string | null {
  const m = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)/i.exec(input);
  return m ? m[1] : null;
}

/** The same host: equal names, or the same address however written. */
function sameHost(a: string, b: string): boolean {
  const [x, y] = [normalizeHost(a), normalizeHost(b)];
  if (x === y) return true;
  return (
    ipaddr.isValid(x) &&
    ipaddr.isValid(y) &&
    ipaddr.parse(x).toNormalizedString() === ipaddr.parse(y).toNormalizedString()
  );
}

/**
 * What a client sent as a repository: `https://`, `http://`, `ssh://`, `git://`, scp-style `user@host:path`,
 * an absolute path or a `file://` URL. Returns the URL to keep (for http(s) without any user info; for
 * ssh with its user name, which is part of the address) and the credentials, or why it is refused.
 */
export function parseRepositoryUrl(input: string): ParsedRepositoryUrl {
  const scheme = SCHEME.exec(input)?.[1].toLowerCase();
  if (scheme) {
    let u: URL;
    try {
      u = new URL(input);
    } catch {
      return { ok: false, reason: 'is not a valid URL' };
    }
    if (scheme === 'file') {
      if (u.host) return { ok: false, reason: 'must be a file:// URL of this host (file:///path)' };
      return { ok: true, url: input, credentials: null, kind: 'local' };
    }
    const kind = SCHEMES[scheme];
    if (!kind)
      return {
        ok: false,
        reason: 'must be an https://, http://, ssh:// or git:// URL, user@host:path or a local path',
      };
    const raw = rawHost(input);
    if (!u.hostname || raw === null || !sameHost(raw, u.hostname)) {
      return { ok: false, reason: 'must name its host plainly' };
    }
    const username = decode(u.username);
    const password = decode(u.password);
    if (kind === 'http') {
      const credentials = username || password ? { username, password } : null;
      u.username = '';
      u.password = '';
      return { ok: true, url: u.toString(), credentials, kind };
    }
    if (password) return { ok: false, reason: 'must not carry a password for ssh or git:// (use https with a token)' };
    return { ok: true, url: input, credentials: null, kind };
  }
  if (input.startsWith('/')) return { ok: true, url: input, credentials: null, kind: 'local' };
  const scp = SCP.exec(input);
  if (scp && !/^[a-z0-9+.-]+::/i.test(input)) {
    if (scp[1]?.includes(':'))
      return { ok: false, reason: 'must not carry a password for ssh (use https with a token)' };
    return { ok: true, url: input, credentials: null, kind: 'ssh' };
  }
  return {
    ok: false,
    reason: 'must be an https://, http://, ssh:// or git:// URL, user@host:path or an absolute local path',
  };
}

/** What git is run with for one repository: the URL or path to hand it, and extra config and environment. */
export interface PreparedRemote {
  kind: RemoteKind;
  /** What git is given: the real path for local repositories, the URL (without credentials) otherwise. */
  target: string;
  /** `-c` options (pinned addresses). */
  config: string[];
  /** Extra ssh options (pinned address, host key alias). */
  sshOptions: string[];
}

/** Checks the repository's location now and pins it; throws LocationRefused or OutboundRefused. */
export async function prepareRemote(repo: GitRepo, access: GitAccess): Promise<PreparedRemote> {
  const parsed = parseRepositoryUrl(repo.url);
  if (!parsed.ok) throw new LocationRefused(parsed.reason);
  if (parsed.kind === 'local') {
    const p = repo.url.startsWith('/') ? repo.url : fileURLToPath(repo.url);
    return { kind: 'local', target: await checkLocalRepository(p, access), config: [], sshOptions: [] };
  }
  if (parsed.kind === 'http') {
    const u = new URL(parsed.url);
    const addresses = await checkOutboundHost(u.hostname, access);
    const host = normalizeHost(u.hostname);
    const port = u.port || (u.protocol === 'https:' ? '443' : '80');
    const literal = addresses.length === 1 && addresses[0] === host;
    const pinned = addresses.map((a) => (a.includes(':') ? `[${a}]` : a)).join(',');
    return {
      kind: 'http',
      target: parsed.url,
      config: literal ? [] : ['-c', `http.curloptResolve=${host}:${port}:${pinned}`],
      sshOptions: [],
    };
  }
  if (parsed.kind === 'git') {
    const u = new URL(repo.url);
    const [address] = await checkOutboundHost(u.hostname, access);
    const pinned = new URL(repo.url);
    pinned.hostname = address.includes(':') ? `[${address}]` : address;
    return { kind: 'git', target: pinned.toString(), config: [], sshOptions: [] };
  }
  const host = sshHost(repo.url);
  const [address] = await checkOutboundHost(host, access);
  return {
    kind: 'ssh',
    target: repo.url,
    config: [],
    sshOptions: ['-o', `HostName=${address}`, '-o', `HostKeyAlias=${normalizeHost(host)}`],
  };
}

/** The host an ssh URL (`ssh://` or scp-like `user@host:path`) names, as written. */
export function sshHost(url: string): string {
  if (SCHEME.test(url)) return new URL(url).hostname;
  return SCP.exec(url)![2];
}

function within(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

async function realOrNull(p: string): Promise<string | null> {
  try {
    return await realpath(p);
  } catch {
    return null;
  }
}

/**
 * The real path git may read for a local repository, or LocationRefused. Every directory git would
 * read from (the repository, the git directory a `.git` file or link points to, its alternates and
 * common dir) must be under a root and outside DATA_DIR. A path that does not exist is refused the
 * same way as one outside the roots unless it would be under a root (nothing is told about the rest).
 */
async function checkLocalRepository(p: string, access: GitAccess): Promise<string> {
  if (access.localRepositoryRoots.length === 0) {
    throw new LocationRefused('is a local path, which this console does not allow (LOCAL_REPOSITORY_ROOTS is not set)');
  }
  const roots = (await Promise.all(access.localRepositoryRoots.map(realOrNull))).filter((r): r is string => r !== null);
  const dataDir = (await realOrNull(access.dataDir)) ?? path.resolve(access.dataDir);
  const allowed = (real: string) =>
    roots.some((root) => within(real, root)) && !within(real, dataDir) && !within(dataDir, real);
  const outside = () =>
    new LocationRefused(
      "is not under a directory of LOCAL_REPOSITORY_ROOTS, or is inside the console's data directory",
    );

  const real = await realOrNull(p);
  if (!real) {
    if (allowed(path.resolve(p))) throw new LocationRefused('no git repository was found at this address', true);
    throw outside();
  }
  if (!allowed(real)) throw outside();
  for (const dir of await gitDirsOf(real)) {
    if (!allowed(dir)) throw outside();
  }
  return real;
}

/** The directories git would read for a repository at `real` (a work tree's .git, alternates, commondir). */
async function gitDirsOf(real: string): Promise<string[]> {
  const dirs: string[] = [];
  let gitDir = real;
  const dotGit = path.join(real, '.git');
  const st = await stat(dotGit).catch(() => null);
  if (st?.isDirectory()) gitDir = (await realOrNull(dotGit)) ?? dotGit;
  else if (st?.isFile()) {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(await readFile(dotGit, 'utf8').catch(() => ''));
    if (m) gitDir = (await realOrNull(path.resolve(real, m[1]))) ?? path.resolve(real, m[1]);
  }
  dirs.push(gitDir);
  const common = (await readFile(path.join(gitDir, 'commondir'), 'utf8').catch(() => '')).trim();
  const commonDir = common
    ? ((await realOrNull(path.resolve(gitDir, common))) ?? path.resolve(gitDir, common))
    : gitDir;
  if (common) dirs.push(commonDir);
  for (const base of new Set([gitDir, commonDir])) {
    const alternates = await readFile(path.join(base, 'objects', 'info', 'alternates'), 'utf8').catch(() => '');
    const lines = alternates.split('\n').map((l) => l.trim());
    for (const line of lines.filter((l) => l && !l.startsWith('#'))) {
      const alt = path.resolve(base, 'objects', line);
      dirs.push((await realOrNull(alt)) ?? alt);
    }
  }
  return dirs;
}

export { OutboundRefused };
