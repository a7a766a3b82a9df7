/**
 * The one way git is run on this host. Every call: a clean environment (an empty HOME of its own under
 * DATA_DIR, no system or global config, no host SSH keys or agent, its own known-hosts file), never a
 * prompt, a timeout, redirects not followed, only the usual transports. Calls that reach a repository
 * first check and pin its location (git-remote.ts); credentials reach git only through GIT_ASKPASS
 * reading variables only the git child sees. git's own error text is never passed on (it tells a closed
 * port from a silent one): failures are a few fixed messages.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
import { MadeOnce } from './per-key';

const DEFAULT_TIMEOUT_MS = 120_000;

type GitErrorCode =
  | 'ref_not_found'
  | 'repository_unreachable'
  | 'repository_not_found'
  | 'authentication_failed'
  | 'redirected'
  | 'location_refused'
  | 'git_failed';

/** The only things said about a failing repository (API answers and task logs alike). */
const GIT_FAILURES: Record<Exclude<GitErrorCode, 'ref_not_found' | 'location_refused' | 'git_failed'>, string> = {
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
    return this.code === 'location_refused'
      ? this.message.replace(/^the repository's address /, '')
      : `is not a repository git can read: ${this.message}`;
  }
}

export interface GitOptions {
  /** DATA_DIR (mirrors, git's home) and where repositories may be (roots, outbound allow list). */
  access: GitAccess;
  /** Per git command (default 120 s). */
  timeoutMs?: number;
}

/**
 * Every git call: never prompts, never asks credential helpers, does not follow redirects, and may use
 * only the usual transports (file, git, http(s), ssh; never `ext::`, which runs commands).
 */
const SAFE_CONFIG = [
  'protocol.allow=never',
  'protocol.file.allow=always',
  'protocol.git.allow=always',
  'protocol.http.allow=always',
  'protocol.https.allow=always',
  'protocol.ssh.allow=always',
  'credential.helper=',
  'http.followRedirects=false',
  'core.hooksPath=/dev/null',
].flatMap((setting) => ['-c', setting]);

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

/** Each DATA_DIR's git home, made once (host/per-key.ts: the value is kept, not the first caller's context). */
const homes = new MadeOnce<GitHome>();
function gitHome(dataDir: string): Promise<GitHome> {
  const base = path.join(path.resolve(dataDir), 'git');
  return homes.get(base, async () => {
    const home = path.join(base, 'home');
    await mkdir(home, { recursive: true, mode: 0o700 });
    const knownHosts = path.join(base, 'known_hosts');
    await writeFile(knownHosts, '', { flag: 'a', mode: 0o600 });
    const askpass = path.join(base, 'askpass');
    await writeFile(askpass, ASKPASS, { mode: 0o700 });
    await chmod(askpass, 0o700);
    return { home, knownHosts, askpass };
  });
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function gitEnv(
  home: GitHome,
  remote?: PreparedRemote,
  credentials?: Credentials | null,
  keyFile?: string,
): NodeJS.ProcessEnv {
  const options = [
    'BatchMode=yes',
    'IdentitiesOnly=yes',
    `IdentityFile=${keyFile ?? 'none'}`,
    'IdentityAgent=none',
    `UserKnownHostsFile=${home.knownHosts}`,
    'GlobalKnownHostsFile=/dev/null',
    'StrictHostKeyChecking=accept-new',
    'ConnectTimeout=20',
  ].flatMap((option) => ['-o', option]);
  const ssh = ['ssh', '-F', '/dev/null', ...options, ...(remote?.sshOptions ?? [])];
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
  /** An OpenSSH private key: ssh uses it (and only it) for this call. */
  sshKey?: string | null;
}

/**
 * Writes an ssh private key into a fresh directory of its own (0700, the file 0600) for one git call;
 * `remove` deletes both.
 */
async function keyFileFor(key: string): Promise<{ file: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vc-ssh-'));
  await chmod(dir, 0o700);
  const file = path.join(dir, 'id_ed25519');
  await writeFile(file, key.endsWith('\n') ? key : `${key}\n`, { mode: 0o600 });
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Which fixed failure git's text amounts to (the text itself goes nowhere). */
function classify(stderr: string): GitErrorCode {
  if (
    /authentication failed|could not read (username|password)|terminal prompts disabled|permission denied|returned error: 40[13]\b/i.test(
      stderr,
    )
  ) {
    return 'authentication_failed';
  }
  if (/returned error: 3\d\d\b|redirect/i.test(stderr)) return 'redirected';
  if (
    /returned error: 404\b|not found|does not appear to be a git repository|not a git repository|no such file or directory|not valid: is this a git repository/i.test(
      stderr,
    )
  ) {
    return 'repository_not_found';
  }
  return 'repository_unreachable';
}

/** Runs git in its clean environment and returns its stdout; failures become GitError with a fixed message. */
export async function git(args: string[], opts: RunOpts): Promise<string> {
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const home = await gitHome(opts.access.dataDir);
  const key = opts.sshKey && opts.remote?.kind === 'ssh' ? await keyFileFor(opts.sshKey) : null;
  const env = { ...gitEnv(home, opts.remote, opts.credentials, key?.file), ...opts.env };
  try {
    return await run(args, opts, env, timeout);
  } finally {
    await key?.remove();
  }
}

function run(args: string[], opts: RunOpts, env: NodeJS.ProcessEnv, timeout: number): Promise<string> {
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
          // A local operation on our own mirror and tree: git's last line names no credentials; it says why.
          const why = String(stderr || '')
            .trim()
            .split('\n')
            .at(-1)
            ?.slice(0, 300);
          return reject(
            new GitError(
              'git_failed',
              e.killed ? `${what} did not finish within ${timeout} ms` : `${what} failed${why ? `: ${why}` : ''}`,
            ),
          );
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
    if (err instanceof LocationRefused && err.notFound)
      throw new GitError('repository_not_found', GIT_FAILURES.repository_not_found);
    if (err instanceof LocationRefused || err instanceof OutboundRefused) {
      throw new GitError('location_refused', `the repository's address ${err.message}`);
    }
    throw err;
  }
}

/** Runs git against the repository itself (ls-remote, clone, fetch): checked, pinned, with its credentials. */
export async function gitRemote(
  repo: GitRepo,
  opts: GitOptions,
  args: (target: string, remote: PreparedRemote) => string[],
  extra: Partial<RunOpts> = {},
) {
  const remote = await remoteFor(repo, opts);
  return git(args(remote.target, remote), {
    access: opts.access,
    timeoutMs: opts.timeoutMs,
    remote,
    credentials: repo.credentials,
    sshKey: repo.sshKey,
    ...extra,
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
