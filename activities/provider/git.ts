/**
 * Git on this host: resolve refs, keep a bare mirror per repository, and materialise an exact commit as a
 * plain directory (no .git inside). Repository locations are checked and pinned before every call that
 * reaches one (git-remote.ts: LOCAL_REPOSITORY_ROOTS, the outbound guard).
 *
 * Git runs with a clean environment: an empty HOME of its own under DATA_DIR, no system or global config,
 * no host SSH keys or agent, its own known-hosts file, never a prompt, a timeout on every call, and
 * redirects not followed. Credentials reach git only through GIT_ASKPASS reading variables only the git
 * child sees; URLs given to git never carry them, so they are not in a mirror's config. git's own error
 * text is never passed on (it tells a closed port from a silent one): failures are a few fixed messages.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  LocationRefused,
  OutboundRefused,
  prepareRemote,
  type Credentials,
  type GitAccess,
  type GitRepo,
  type PreparedRemote,
} from './git-remote';

export type { GitAccess, GitRepo, Credentials };

export type GitErrorCode =
  | 'ref_not_found'
  | 'repository_unreachable'
  | 'repository_not_found'
  | 'authentication_failed'
  | 'redirected'
  | 'location_refused'
  | 'git_failed';

/** The only things said about a failing repository (API answers and task logs alike). */
export const GIT_FAILURES: Record<Exclude<GitErrorCode, 'ref_not_found' | 'location_refused' | 'git_failed'>, string> = {
  repository_unreachable: 'the repository could not be reached',
  repository_not_found: 'no git repository was found at this address',
  authentication_failed: 'authentication failed: the repository refused the credentials, or needs some',
  redirected: 'the server answered with a redirect, which is not followed: give the final URL',
};

export class GitError extends Error {
  constructor(
    readonly code: GitErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'GitError';
  }

  /** A phrase for `error.fields.url`. */
  get fieldReason(): string {
    return this.code === 'location_refused' ? this.message.replace(/^the repository's address /, '') : `is not a repository git can read: ${this.message}`;
  }
}

export interface GitOptions {
  /** DATA_DIR (mirrors, git's home) and where repositories may be (roots, outbound allow list). */
  access: GitAccess;
  /** Per git command (default 120 s). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const SHA_RE = /^[0-9a-f]{40}$/i;
const SHORT_SHA_RE = /^[0-9a-f]{4,40}$/i;

/** `https://user:secret@host/x.git` -> `https://host/x.git`; also scrubs such URLs inside any text. */
export function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1');
}

/**
 * Every git call: never prompts, never asks credential helpers, does not follow redirects, and may use
 * only the usual transports (file, git, http(s), ssh; never `ext::`, which runs commands).
 */
const SAFE_CONFIG = [
  '-c', 'protocol.allow=never',
  '-c', 'protocol.file.allow=always',
  '-c', 'protocol.git.allow=always',
  '-c', 'protocol.http.allow=always',
  '-c', 'protocol.https.allow=always',
  '-c', 'protocol.ssh.allow=always',
  '-c', 'credential.helper=',
  '-c', 'http.followRedirects=false',
  '-c', 'core.hooksPath=/dev/null',
];

/** git's own directory under DATA_DIR: an empty HOME, the known-hosts file, the askpass script. */
interface GitHome {
  home: string;
  knownHosts: string;
  askpass: string;
}

const ASKPASS = `#!/bin/sh
case "$1" in
  Username*) printf '%s\n' "$VC_GIT_USERNAME" ;;
  *) printf '%s\n' "$VC_GIT_PASSWORD" ;;
esac
`;

const homes = new Map<string, Promise<GitHome>>();
function gitHome(dataDir: string): Promise<GitHome> {
  const base = path.join(path.resolve(dataDir), 'git');
  let ready = homes.get(base);
  if (!ready) {
    ready = (async () => {
      const home = path.join(base, 'home');
      await mkdir(home, { recursive: true, mode: 0o700 });
      const knownHosts = path.join(base, 'known_hosts');
      await writeFile(knownHosts, '', { flag: 'a', mode: 0o600 });
      const askpass = path.join(base, 'askpass');
      await writeFile(askpass, ASKPASS, { mode: 0o700 });
      await chmod(askpass, 0o700);
      return { home, knownHosts, askpass };
    })();
    ready.catch(() => homes.delete(base));
    homes.set(base, ready);
  }
  return ready;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function gitEnv(home: GitHome, remote?: PreparedRemote, credentials?: Credentials | null): NodeJS.ProcessEnv {
  const ssh = [
    'ssh', '-F', '/dev/null',
    '-o', 'BatchMode=yes',
    '-o', 'IdentitiesOnly=yes',
    '-o', 'IdentityFile=none',
    '-o', 'IdentityAgent=none',
    '-o', `UserKnownHostsFile=${home.knownHosts}`,
    '-o', 'GlobalKnownHostsFile=/dev/null',
    '-o', 'StrictHostKeyChecking=accept-new',
    '-o', 'ConnectTimeout=20',
    ...(remote?.sshOptions ?? []),
  ];
  return {
    PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
    HOME: home.home,
    XDG_CONFIG_HOME: home.home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: credentials ? home.askpass : 'true',
    SSH_ASKPASS: 'true',
    GIT_SSH_COMMAND: ssh.map(quote).join(' '),
    GIT_SSH_VARIANT: 'ssh',
    LANG: 'C',
    LC_ALL: 'C',
    ...(credentials ? { VC_GIT_USERNAME: credentials.username, VC_GIT_PASSWORD: credentials.password } : {}),
  };
}

interface RunOpts {
  access: GitAccess;
  cwd?: string;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Set when the call reaches the repository: failures are then told as GIT_FAILURES. */
  remote?: PreparedRemote;
  credentials?: Credentials | null;
}

/** Which fixed failure git's text amounts to (the text itself goes nowhere). */
function classify(stderr: string): GitErrorCode {
  if (/authentication failed|could not read (username|password)|terminal prompts disabled|permission denied|returned error: 40[13]\b/i.test(stderr)) {
    return 'authentication_failed';
  }
  if (/returned error: 3\d\d\b|redirect/i.test(stderr)) return 'redirected';
  if (/returned error: 404\b|not found|does not appear to be a git repository|not a git repository|no such file or directory|not valid: is this a git repository/i.test(stderr)) {
    return 'repository_not_found';
  }
  return 'repository_unreachable';
}

/** Runs git in its clean environment and returns its stdout; failures become GitError with a fixed message. */
export async function git(args: string[], opts: RunOpts): Promise<string> {
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const home = await gitHome(opts.access.dataDir);
  const env = { ...gitEnv(home, opts.remote, opts.credentials), ...opts.env };
  const what = `git ${subcommand(args)}`;
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...SAFE_CONFIG, ...(opts.remote?.config ?? []), ...args],
      { cwd: opts.cwd, env, timeout, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const e = err as NodeJS.ErrnoException & { killed?: boolean };
        if (!opts.remote) {
          return reject(new GitError('git_failed', e.killed ? `${what} did not finish within ${timeout} ms` : `${what} failed`));
        }
        const code = e.killed ? 'repository_unreachable' : classify(String(stderr || ''));
        reject(new GitError(code, GIT_FAILURES[code as keyof typeof GIT_FAILURES]));
      },
    );
  });
}

/** Checks and pins the repository's location for one call; a refused location is a GitError. */
async function remoteFor(repo: GitRepo, opts: GitOptions): Promise<PreparedRemote> {
  try {
    return await prepareRemote(repo, opts.access);
  } catch (err) {
    if (err instanceof LocationRefused && err.notFound) throw new GitError('repository_not_found', GIT_FAILURES.repository_not_found);
    if (err instanceof LocationRefused || err instanceof OutboundRefused) {
      throw new GitError('location_refused', `the repository's address ${err.message}`);
    }
    throw err;
  }
}

/** Runs git against the repository itself (ls-remote, clone, fetch): checked, pinned, with its credentials. */
async function gitRemote(repo: GitRepo, opts: GitOptions, args: (target: string, remote: PreparedRemote) => string[], extra: Partial<RunOpts> = {}) {
  const remote = await remoteFor(repo, opts);
  return git(args(remote.target, remote), { access: opts.access, timeoutMs: opts.timeoutMs, remote, credentials: repo.credentials, ...extra });
}

/** A URL to show people: a password always removed; for http(s) a lone user name too (often a token). */
export function displayUrl(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*@)(.*)$/is.exec(url);
  if (!m) return url;
  const [, scheme, userinfo, rest] = m;
  const info = userinfo.slice(0, -1);
  const colon = info.indexOf(':');
  const user = colon >= 0 ? info.slice(0, colon) : info;
  if (colon < 0 && /^https?:\/\//i.test(scheme)) return scheme + rest;
  return user ? `${scheme}${user}@${rest}` : scheme + rest;
}

/** The git subcommand of an argument list (options such as --git-dir and their values skipped). */
function subcommand(args: string[]): string {
  for (let i = 0; i < args.length; i++) {
    if (['--git-dir', '--work-tree', '-c', '-C'].includes(args[i])) i++;
    else if (!args[i].startsWith('-')) return args[i];
  }
  return '';
}

export interface RemoteRef {
  ref: string;
  sha: string;
}

/** Every ref the remote advertises (`git ls-remote --symref`; peeled tags as `refs/tags/x^{}`) and HEAD's branch. */
export async function lsRemoteRefs(repo: GitRepo, opts: GitOptions): Promise<{ refs: RemoteRef[]; head?: string }> {
  const out = await gitRemote(repo, opts, (target) => ['ls-remote', '--symref', '--', target]);
  const refs: RemoteRef[] = [];
  let head: string | undefined;
  for (const line of out.split('\n')) {
    const sym = /^ref: refs\/heads\/(\S+)\tHEAD$/.exec(line);
    if (sym) head = sym[1];
    const m = /^([0-9a-f]{40,64})\t(\S+)$/.exec(line);
    if (m) refs.push({ sha: m[1], ref: m[2] });
  }
  return { refs, head };
}

/** Every ref the remote advertises. */
export async function lsRemote(repo: GitRepo, opts: GitOptions): Promise<RemoteRef[]> {
  return (await lsRemoteRefs(repo, opts)).refs;
}

/**
 * The full commit sha a ref names: a branch, a tag (peeled), `HEAD`, a full `refs/...` name, or a commit
 * sha (full or abbreviated; checked against the repository through its mirror).
 */
export async function resolveRef(repo: GitRepo, ref: string, opts: GitOptions): Promise<string> {
  const want = ref.trim() || 'HEAD';
  const refs = await lsRemote(repo, opts);
  const byName = new Map(refs.map((r) => [r.ref, r.sha]));
  const candidates =
    want === 'HEAD'
      ? ['HEAD']
      : want.startsWith('refs/')
        ? [`${want}^{}`, want]
        : [`refs/heads/${want}`, `refs/tags/${want}^{}`, `refs/tags/${want}`];
  for (const name of candidates) {
    const sha = byName.get(name);
    if (sha) return sha;
  }
  if (SHORT_SHA_RE.test(want)) {
    const mirror = await ensureMirror(repo, opts);
    const found = await revParseCommit(mirror, want, opts);
    if (found) return found;
    if (SHA_RE.test(want)) {
      await fetchSha(mirror, repo, want, opts);
      const again = await revParseCommit(mirror, want, opts);
      if (again) return again;
    }
  }
  throw new GitError('ref_not_found', `no branch, tag or commit named "${want}" in the repository`);
}

/** Branch heads of the repository: `[{ branch, sha }]`, sorted by name. */
export async function listBranches(repo: GitRepo, opts: GitOptions): Promise<{ branch: string; sha: string }[]> {
  const refs = await lsRemote(repo, opts);
  return refs
    .filter((r) => r.ref.startsWith('refs/heads/'))
    .map((r) => ({ branch: r.ref.slice('refs/heads/'.length), sha: r.sha }))
    .sort((a, b) => a.branch.localeCompare(b.branch));
}

export interface BranchCommit {
  sha: string;
  author: string;
  committedAt: string;
  subject: string;
}

/** The newest commits of one branch (from the mirror, fetched first), newest first. */
export async function listBranchCommits(
  repo: GitRepo,
  branch: string,
  opts: GitOptions & { limit?: number },
): Promise<BranchCommit[]> {
  const mirror = await ensureMirror(repo, opts);
  await fetchMirror(mirror, repo, opts);
  let out: string;
  try {
    out = await git(
      ['--git-dir', mirror, 'log', `-n${opts.limit ?? 20}`, '--format=%H%x1f%an%x1f%cI%x1f%s', `refs/heads/${branch}`, '--'],
      { access: opts.access, timeoutMs: opts.timeoutMs },
    );
  } catch {
    throw new GitError('ref_not_found', `no branch named "${branch}" in the repository`);
  }
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [sha, author, committedAt, subject] = line.split('\x1f');
      return { sha, author, committedAt, subject };
    });
}

export interface CheckoutOptions extends GitOptions {
  repo: GitRepo;
  sha: string;
  /** Created (with parents) if missing; should be empty. Receives the tree of `sha`, without .git. */
  dir: string;
}

/**
 * Writes the tree of exactly `sha` into `dir`, from the repository's bare mirror (fetched when the
 * commit is not there yet). The files are checked out through a throwaway index, so `dir` holds no git
 * internals and shares nothing with the mirror. Submodules are not checked out.
 */
export async function checkout(opts: CheckoutOptions): Promise<void> {
  const { repo, sha, dir } = opts;
  const mirror = await mirrorWithCommit(repo, sha, opts);
  await mkdir(dir, { recursive: true });
  const index = path.join(os.tmpdir(), `vc-index-${randomBytes(6).toString('hex')}`);
  const base = ['--git-dir', mirror, '--work-tree', path.resolve(dir)];
  const run = { access: opts.access, timeoutMs: opts.timeoutMs, env: { GIT_INDEX_FILE: index } };
  try {
    await git([...base, 'read-tree', sha], run);
    await git([...base, 'checkout-index', '--all', '--force'], { ...run, cwd: dir });
  } finally {
    await rm(index, { recursive: true, force: true });
  }
}

/** The mirror of `repo`, holding commit `sha` (fetched when missing); ref_not_found when the repository has none. */
export async function mirrorWithCommit(repo: GitRepo, sha: string, opts: GitOptions): Promise<string> {
  if (!SHA_RE.test(sha)) throw new GitError('ref_not_found', `"${sha}" is not a full commit sha`);
  const mirror = await ensureMirror(repo, opts);
  if (!(await revParseCommit(mirror, sha, opts))) {
    await fetchMirror(mirror, repo, opts);
    if (!(await revParseCommit(mirror, sha, opts))) await fetchSha(mirror, repo, sha, opts);
    if (!(await revParseCommit(mirror, sha, opts))) throw new GitError('ref_not_found', `commit ${sha} is not in the repository`);
  }
  return mirror;
}

/** Where bare mirrors are kept under DATA_DIR. */
export function mirrorsDir(dataDir: string): string {
  return path.join(path.resolve(dataDir), 'git-mirrors');
}

/** Path of the bare mirror of a repository: one per project and URL, whatever the credentials. */
export function mirrorPath(cacheDir: string, repo: GitRepo): string {
  const key = createHash('sha256').update(`${repo.scope ?? ''}\n${repo.url}`).digest('hex').slice(0, 24);
  return path.join(cacheDir, `${key}.git`);
}

// One git operation at a time per mirror within this process (fetches take ref locks).
const locks = new Map<string, Promise<unknown>>();
function withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = locks.get(key) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.catch(() => undefined);
  locks.set(key, tail);
  void tail.then(() => {
    if (locks.get(key) === tail) locks.delete(key);
  });
  return next;
}

/**
 * Creates the mirror with `git clone --mirror` of the bare URL or real path (into a temp dir, renamed
 * when complete); credentials, when needed, come through askpass and are never written into it.
 */
export async function ensureMirror(repo: GitRepo, opts: GitOptions): Promise<string> {
  const cacheDir = mirrorsDir(opts.access.dataDir);
  const mirror = mirrorPath(cacheDir, repo);
  return withLock(mirror, async () => {
    if (await exists(path.join(mirror, 'HEAD'))) return mirror;
    await mkdir(cacheDir, { recursive: true });
    const tmp = `${mirror}.tmp-${randomBytes(4).toString('hex')}`;
    try {
      await gitRemote(repo, opts, (target, remote) => [
        'clone', '--mirror', '--quiet', ...(remote.kind === 'local' ? ['--no-local'] : []), '--', target, tmp,
      ]);
      await rm(mirror, { recursive: true, force: true });
      await rename(tmp, mirror);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    return mirror;
  });
}

/** `git fetch --prune` of every ref into the mirror, from the checked location. */
export function fetchMirror(mirror: string, repo: GitRepo, opts: GitOptions): Promise<void> {
  return withLock(mirror, async () => {
    await gitRemote(repo, opts, (target) => ['--git-dir', mirror, 'fetch', '--prune', '--quiet', target, '+refs/*:refs/*']);
  });
}

/** Fetches one commit by sha (servers that allow it); failure is not an error here. */
function fetchSha(mirror: string, repo: GitRepo, sha: string, opts: GitOptions): Promise<void> {
  return withLock(mirror, async () => {
    await gitRemote(repo, opts, (target) => ['--git-dir', mirror, 'fetch', '--quiet', target, sha]).catch(() => undefined);
  });
}

async function revParseCommit(mirror: string, rev: string, opts: GitOptions): Promise<string | null> {
  try {
    const out = await git(['--git-dir', mirror, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`], {
      access: opts.access,
      timeoutMs: opts.timeoutMs,
    });
    return out.trim() || null;
  } catch {
    return null;
  }
}

/** What `path` is in commit `sha` of the mirror: 'blob', 'symlink', 'tree', 'commit' (a submodule) or null. */
export async function treeEntryKind(mirror: string, sha: string, file: string, opts: GitOptions): Promise<string | null> {
  const listed = await git(['--git-dir', mirror, 'ls-tree', sha, '--', file], { access: opts.access, timeoutMs: opts.timeoutMs });
  const m = /^(\d{6}) (\w+) /.exec(listed);
  if (!m) return null;
  if (m[1] === '120000') return 'symlink';
  return m[2];
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}
