// Finds the Temporal CLI (server + Web UI, SQLite), building it with Go when it is missing.
// Order: env TEMPORAL_CLI, then PATH, then the cache outside the repository.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

export const TEMPORAL_CLI_VERSION = '1.5.1';

export function cacheDir() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'vc-console', `temporal-v${TEMPORAL_CLI_VERSION}`);
}

export function onPath(name) {
  for (const dir of (process.env.PATH || '').split(delimiter)) {
    const candidate = join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

function works(bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return r.status === 0;
}

/** Returns the path of a working Temporal CLI, or undefined. Never builds. */
export function findTemporalCli() {
  if (process.env.TEMPORAL_CLI) {
    if (works(process.env.TEMPORAL_CLI)) return process.env.TEMPORAL_CLI;
    throw new Error(`TEMPORAL_CLI is set to ${process.env.TEMPORAL_CLI}, but running it with --version failed`);
  }
  const fromPath = onPath('temporal');
  if (fromPath && works(fromPath)) return fromPath;
  const cached = join(cacheDir(), 'temporal');
  if (existsSync(cached) && works(cached)) return cached;
  return undefined;
}

/** Finds the CLI or builds it into the cache with `go install` (minutes, once). */
export function ensureTemporalCli(log = (m) => console.error(m)) {
  const found = findTemporalCli();
  if (found) return found;
  const dir = cacheDir();
  const goBin = onPath('go') || (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!goBin) {
    throw new Error(
      'The Temporal CLI was not found (env TEMPORAL_CLI, PATH, or ' +
        dir +
        ') and Go is not installed to build it.\n' +
        'Get the CLI one of these ways, then run the command again:\n' +
        '  - install Go (https://go.dev/dl/) and let this script build it, or run\n' +
        `    GOBIN=${dir} go install github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}\n` +
        '  - brew install temporal   (macOS / Linuxbrew)\n' +
        '  - download a release from https://github.com/temporalio/cli/releases and set TEMPORAL_CLI=/path/to/temporal',
    );
  }
  mkdirSync(dir, { recursive: true });
  // One build at a time on a host: runs started side by side wait for the first one's binary.
  const lock = join(dir, '.build-lock');
  if (!takeLock(lock)) {
    log(`[setup] Another process is building the Temporal CLI into ${dir}; waiting for it...`);
    for (;;) {
      sleepMs(3000);
      const ready = findTemporalCli();
      if (ready) return ready;
      if (takeLock(lock)) break;
    }
  }
  try {
    return build(dir, goBin, log);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** The lock is a directory (mkdir is atomic); one older than 30 minutes is a crashed build's, taken over. */
export function takeLock(lock) {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs > 30 * 60_000) {
        rmSync(lock, { recursive: true, force: true });
        mkdirSync(lock);
        return true;
      }
    } catch {}
    return false;
  }
}

export function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function build(dir, goBin, log) {
  log(
    `[setup] Building the Temporal CLI v${TEMPORAL_CLI_VERSION} with Go into ${dir} (once; the first build takes several minutes)...`,
  );
  try {
    execFileSync(goBin, ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, GOBIN: dir, GOFLAGS: process.env.GOFLAGS || '-buildvcs=false' },
    });
  } catch (err) {
    throw new Error(
      `Building the Temporal CLI failed (go install github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}).\n` +
        'If the Go module proxy cannot be reached, install the CLI another way (brew install temporal, or a release\n' +
        'binary from https://github.com/temporalio/cli/releases) and set TEMPORAL_CLI to its path.',
      { cause: err },
    );
  }
  const built = join(dir, 'temporal');
  if (!works(built)) throw new Error(`The Temporal CLI was built at ${built} but does not run`);
  log(`[setup] Temporal CLI ready: ${built}`);
  return built;
}
