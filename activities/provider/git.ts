/**
 * Git on this host: resolve refs, keep a bare mirror per repository, and materialise an exact commit as a
 * plain directory (no .git inside). Repository URLs are anything `git clone` accepts, local paths included.
 * Git never prompts (GIT_TERMINAL_PROMPT=0) and every call has a timeout. URLs are printed without userinfo.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export type GitErrorCode = 'ref_not_found' | 'repository_unreachable' | 'timeout' | 'git_failed';

export class GitError extends Error {
  constructor(
    readonly code: GitErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

export interface GitOptions {
  /** Where bare mirrors are kept (one per repository). Default: `<tmpdir>/vc-git-mirrors`. */
  cacheDir?: string;
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
 * Every git call: never prompts, never asks the host's credential helpers, and may use only the usual
 * transports (file, git, http(s), ssh; never `ext::`, which runs commands).
 */
const SAFE_CONFIG = [
  '-c', 'protocol.allow=never',
  '-c', 'protocol.file.allow=always',
  '-c', 'protocol.git.allow=always',
  '-c', 'protocol.http.allow=always',
  '-c', 'protocol.https.allow=always',
  '-c', 'protocol.ssh.allow=always',
  '-c', 'credential.helper=',
  '-c', 'core.askPass=true',
];

function gitEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    SSH_ASKPASS: 'true',
    GIT_SSH_COMMAND: process.env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
    LANG: 'C',
    LC_ALL: 'C',
  };
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

/** Removes the credentials of `url` (as given and percent-decoded) from a message, and any userinfo. */
function scrub(text: string, url: string): string {
  const info = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/is.exec(url)?.[1];
  let out = redactUrl(text);
  if (info) {
    for (const part of info.split(':')) {
      if (part.length < 3) continue;
      for (const secret of new Set([part, safeDecode(part)])) out = out.split(secret).join('***');
    }
  }
  return out;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

interface RunOpts {
  cwd?: string;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Runs git and returns its stdout; failures become GitError with a redacted message. */
export function git(args: string[], opts: RunOpts = {}): Promise<string> {
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...SAFE_CONFIG, ...args],
      { cwd: opts.cwd, env: opts.env ?? gitEnv(), timeout, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
        const what = `git ${subcommand(args)}`;
        if (e.killed) return reject(new GitError('timeout', `${what} did not finish within ${timeout} ms`));
        const all = args.reduce((text, arg) => (arg.includes('@') ? scrub(text, arg) : text), redactUrl(String(stderr || e.message)));
        const detail = all
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .slice(0, 2)
          .join(' ');
        const unreachable =
          /could not read from remote|does not appear to be a git repository|repository .* not found|unable to access|could not resolve host|authentication failed|terminal prompts disabled|no such file or directory/i;
        const code: GitErrorCode = unreachable.test(all) ? 'repository_unreachable' : 'git_failed';
        reject(new GitError(code, `${what} failed: ${detail}`));
      },
    );
  });
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

/** Every ref the remote advertises (`git ls-remote`); peeled tags appear as `refs/tags/x^{}`. */
export async function lsRemote(repoUrl: string, patterns: string[] = [], opts: GitOptions = {}): Promise<RemoteRef[]> {
  const out = await git(['ls-remote', '--', repoUrl, ...patterns], { timeoutMs: opts.timeoutMs });
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [sha, ref] = line.split('\t');
      return { sha, ref };
    });
}

/**
 * The full commit sha a ref names: a branch, a tag (peeled), `HEAD`, a full `refs/...` name, or a commit
 * sha (full or abbreviated; checked against the repository through its mirror).
 */
export async function resolveRef(repoUrl: string, ref: string, opts: GitOptions = {}): Promise<string> {
  const want = ref.trim() || 'HEAD';
  const refs = await lsRemote(repoUrl, [], opts);
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
    const mirror = await ensureMirror(repoUrl, opts);
    const found = await revParseCommit(mirror, want, opts);
    if (found) return found;
    if (SHA_RE.test(want)) {
      await fetchSha(mirror, want, opts);
      const again = await revParseCommit(mirror, want, opts);
      if (again) return again;
    }
  }
  throw new GitError('ref_not_found', `no branch, tag or commit named "${want}" in ${redactUrl(repoUrl)}`);
}

/** Branch heads of the repository: `[{ branch, sha }]`, sorted by name. */
export async function listBranches(repoUrl: string, opts: GitOptions = {}): Promise<{ branch: string; sha: string }[]> {
  const refs = await lsRemote(repoUrl, [], opts);
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
  repoUrl: string,
  branch: string,
  opts: GitOptions & { limit?: number } = {},
): Promise<BranchCommit[]> {
  const mirror = await ensureMirror(repoUrl, opts);
  await fetchMirror(mirror, opts);
  let out: string;
  try {
    out = await git(
      ['--git-dir', mirror, 'log', `-n${opts.limit ?? 20}`, '--format=%H%x1f%an%x1f%cI%x1f%s', `refs/heads/${branch}`, '--'],
      { timeoutMs: opts.timeoutMs },
    );
  } catch {
    throw new GitError('ref_not_found', `no branch named "${branch}" in ${redactUrl(repoUrl)}`);
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
  repoUrl: string;
  sha: string;
  /** Created (with parents) if missing; should be empty. Receives the tree of `sha`, without .git. */
  dir: string;
  cacheDir: string;
}

/**
 * Writes the tree of exactly `sha` into `dir`, from a bare mirror kept under `cacheDir` (fetched when the
 * commit is not there yet). The files are checked out through a throwaway index, so `dir` holds no git
 * internals and shares nothing with the mirror. Submodules are not checked out.
 */
export async function checkout(opts: CheckoutOptions): Promise<void> {
  const { repoUrl, sha, dir } = opts;
  if (!SHA_RE.test(sha)) throw new GitError('ref_not_found', `"${sha}" is not a full commit sha`);
  const mirror = await ensureMirror(repoUrl, opts);
  if (!(await revParseCommit(mirror, sha, opts))) {
    await fetchMirror(mirror, opts);
    if (!(await revParseCommit(mirror, sha, opts))) await fetchSha(mirror, sha, opts);
    if (!(await revParseCommit(mirror, sha, opts))) {
      throw new GitError('ref_not_found', `commit ${sha} is not in ${redactUrl(repoUrl)}`);
    }
  }
  await mkdir(dir, { recursive: true });
  const index = path.join(os.tmpdir(), `vc-index-${randomBytes(6).toString('hex')}`);
  const env = { ...gitEnv(), GIT_INDEX_FILE: index };
  const base = ['--git-dir', mirror, '--work-tree', path.resolve(dir)];
  try {
    await git([...base, 'read-tree', sha], { env, timeoutMs: opts.timeoutMs });
    await git([...base, 'checkout-index', '--all', '--force'], { env, cwd: dir, timeoutMs: opts.timeoutMs });
  } finally {
    await rm(index, { force: true });
  }
}

/** Path of the bare mirror of `repoUrl` under cacheDir (one per URL). */
export function mirrorPath(cacheDir: string, repoUrl: string): string {
  const key = createHash('sha256').update(repoUrl).digest('hex').slice(0, 24);
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

/** Creates the mirror with `git clone --mirror` (into a temp dir, renamed when complete). */
export async function ensureMirror(repoUrl: string, opts: GitOptions = {}): Promise<string> {
  const cacheDir = opts.cacheDir ?? path.join(os.tmpdir(), 'vc-git-mirrors');
  const mirror = mirrorPath(cacheDir, repoUrl);
  return withLock(mirror, async () => {
    if (await exists(path.join(mirror, 'HEAD'))) return mirror;
    await mkdir(cacheDir, { recursive: true });
    const tmp = `${mirror}.tmp-${randomBytes(4).toString('hex')}`;
    try {
      await git(['clone', '--mirror', '--quiet', '--', repoUrl, tmp], { timeoutMs: opts.timeoutMs });
      await rm(mirror, { recursive: true, force: true });
      await rename(tmp, mirror);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    return mirror;
  });
}

/** `git fetch --prune` of every ref into the mirror. */
export function fetchMirror(mirror: string, opts: GitOptions = {}): Promise<void> {
  return withLock(mirror, async () => {
    await git(['--git-dir', mirror, 'fetch', '--prune', '--quiet', 'origin'], { timeoutMs: opts.timeoutMs });
  });
}

/** Fetches one commit by sha (servers that allow it); failure is not an error here. */
function fetchSha(mirror: string, sha: string, opts: GitOptions): Promise<void> {
  return withLock(mirror, async () => {
    await git(['--git-dir', mirror, 'fetch', '--quiet', 'origin', sha], { timeoutMs: opts.timeoutMs }).catch(
      () => undefined,
    );
  });
}

async function revParseCommit(mirror: string, rev: string, opts: GitOptions): Promise<string | null> {
  try {
    const out = await git(['--git-dir', mirror, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`], {
      timeoutMs: opts.timeoutMs,
    });
    return out.trim() || null;
  } catch {
    return null;
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}
