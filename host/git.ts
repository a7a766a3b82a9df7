/**
 * Git on this host: resolve refs, keep a bare mirror per repository (one per project and URL), and
 * materialise an exact commit as a plain directory (no .git inside). Every git call goes through
 * git-run.ts (clean environment, location checked and pinned, fixed failure messages).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { git, GitError, gitRemote, type GitOptions } from './git-run';
import type { GitRepo } from './git-remote';
import { MadeOnce, OneAtATime } from './per-key';

export { git, GitError, type GitOptions } from './git-run';
export type { GitAccess, GitRepo } from './git-remote';

const SHA_RE = /^[0-9a-f]{40}$/i;
const SHORT_SHA_RE = /^[0-9a-f]{4,40}$/i;

/** `https://user:secret@host/x.git` -> `https://host/x.git`; also scrubs such URLs inside any text. */
export function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1');
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

interface RemoteRef {
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
async function lsRemote(repo: GitRepo, opts: GitOptions): Promise<RemoteRef[]> {
  return (await lsRemoteRefs(repo, opts)).refs;
}

/**
 * The commit a ref name points at among a remote's refs: `HEAD`, a full `refs/...` name (peeled first), or a
 * branch, then a tag (peeled first) of that name; null when none matches (a sha is not looked up here).
 */
export function shaOfRef(refs: Array<{ sha: string; ref: string }>, ref: string): string | null {
  const want = ref.trim() || 'HEAD';
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
  return null;
}

/**
 * The full commit sha a ref names: a branch, a tag (peeled), `HEAD`, a full `refs/...` name, or a commit
 * sha (full or abbreviated; checked against the repository through its mirror).
 */
export async function resolveRef(repo: GitRepo, ref: string, opts: GitOptions): Promise<string> {
  const want = ref.trim() || 'HEAD';
  const named = shaOfRef(await lsRemote(repo, opts), want);
  if (named) return named;
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

interface BranchCommit {
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
      [
        '--git-dir',
        mirror,
        'log',
        `-n${opts.limit ?? 20}`,
        '--format=%H%x1f%an%x1f%cI%x1f%s',
        `refs/heads/${branch}`,
        '--',
      ],
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

interface CheckoutOptions extends GitOptions {
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
  try {
    await checkoutFrom(mirror, sha, dir, opts);
  } catch (err) {
    // A worker killed in the middle of a fetch leaves its git running on (and the mirror short of objects
    // for a moment): wait, fetch again, and check out once more into an empty directory.
    if (!(err instanceof GitError) || err.code !== 'git_failed') throw err;
    await new Promise((r) => setTimeout(r, 2000));
    await fetchMirror(mirror, repo, opts);
    await rm(dir, { recursive: true, force: true });
    await checkoutFrom(mirror, sha, dir, opts);
  }
}

async function checkoutFrom(mirror: string, sha: string, dir: string, opts: CheckoutOptions): Promise<void> {
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
    if (!(await revParseCommit(mirror, sha, opts)))
      throw new GitError('ref_not_found', `commit ${sha} is not in the repository`);
  }
  return mirror;
}

/** Where bare mirrors are kept under DATA_DIR. */
function mirrorsDir(dataDir: string): string {
  return path.join(path.resolve(dataDir), 'git-mirrors');
}

/** Path of the bare mirror of a repository: one per project and URL, whatever the credentials. */
function mirrorPath(cacheDir: string, repo: GitRepo): string {
  const key = createHash('sha256')
    .update(`${repo.scope ?? ''}\n${repo.url}`)
    .digest('hex')
    .slice(0, 24);
  return path.join(cacheDir, `${key}.git`);
}

// One git operation at a time per mirror within this process (fetches take ref locks).
const mirrors = new OneAtATime();

/**
 * Creates the mirror with `git clone --mirror` of the bare URL or real path (into a temp dir, renamed
 * when complete); credentials, when needed, come through askpass and are never written into it.
 */
export async function ensureMirror(repo: GitRepo, opts: GitOptions): Promise<string> {
  const cacheDir = mirrorsDir(opts.access.dataDir);
  const mirror = mirrorPath(cacheDir, repo);
  await sweepLegacyMirrors(cacheDir);
  return mirrors.run(mirror, async () => {
    if (await exists(path.join(mirror, 'HEAD'))) return mirror;
    await mkdir(cacheDir, { recursive: true });
    const tmp = `${mirror}.tmp-${randomBytes(4).toString('hex')}`;
    try {
      await gitRemote(repo, opts, (target, remote) => [
        'clone',
        '--mirror',
        '--quiet',
        ...(remote.kind === 'local' ? ['--no-local'] : []),
        '--',
        target,
        tmp,
      ]);
      await rm(mirror, { recursive: true, force: true });
      await rename(tmp, mirror);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    return mirror;
  });
}

const swept = new MadeOnce<void>();

/**
 * Mirrors cloned before credentials were kept apart (their config holds a URL with user info) are
 * removed once per process: nothing uses them any more (mirror keys now include the project).
 */
function sweepLegacyMirrors(cacheDir: string): Promise<void> {
  return swept.get(cacheDir, async () => {
    const names = await readdir(cacheDir).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.endsWith('.git'))) {
      const config = await readFile(path.join(cacheDir, name, 'config'), 'utf8').catch(() => '');
      if (/^\s*url\s*=\s*(https?:\/\/[^/\s]*@|[a-z][a-z0-9+.-]*:\/\/[^/\s@:]*:[^/\s@]*@)/im.test(config)) {
        await rm(path.join(cacheDir, name), { recursive: true, force: true });
      }
    }
  });
}

/** `git fetch --prune` of every ref into the mirror, from the checked location. */
function fetchMirror(mirror: string, repo: GitRepo, opts: GitOptions): Promise<void> {
  return mirrors.run(mirror, async () => {
    await gitRemote(repo, opts, (target) => [
      '--git-dir',
      mirror,
      'fetch',
      '--prune',
      '--quiet',
      target,
      '+refs/*:refs/*',
    ]);
  });
}

/** Fetches one commit by sha (servers that allow it); failure is not an error here. */
function fetchSha(mirror: string, repo: GitRepo, sha: string, opts: GitOptions): Promise<void> {
  return mirrors.run(mirror, async () => {
    await gitRemote(repo, opts, (target) => ['--git-dir', mirror, 'fetch', '--quiet', target, sha]).catch(
      () => undefined,
    );
  });
}

/** The most characters of a commit's subject a release keeps. */
const COMMIT_MESSAGE_MAX = 200;

/** The subject of commit `sha` (`git log -1 --format=%s`) from the mirror, at most COMMIT_MESSAGE_MAX characters. */
export async function commitSubject(repo: GitRepo, sha: string, opts: GitOptions): Promise<string> {
  const mirror = await mirrorWithCommit(repo, sha, opts);
  const out = await git(['--git-dir', mirror, 'log', '-1', '--format=%s', sha, '--'], {
    access: opts.access,
    timeoutMs: opts.timeoutMs,
  });
  return [...out.replace(/\n+$/, '')].slice(0, COMMIT_MESSAGE_MAX).join('');
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
export async function treeEntryKind(
  mirror: string,
  sha: string,
  file: string,
  opts: GitOptions,
): Promise<string | null> {
  const listed = await git(['--git-dir', mirror, 'ls-tree', sha, '--', file], {
    access: opts.access,
    timeoutMs: opts.timeoutMs,
  });
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
