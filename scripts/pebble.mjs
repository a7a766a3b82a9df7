// Finds Pebble, Let's Encrypt's test ACME CA (tests of automatic HTTPS), building it with Go when missing.
// Order: env PEBBLE, then PATH, then the cache outside the repository (~/.cache/vc-console/pebble-v2.10.1),
// else `go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.1` into that cache (about 10 s), one
// build at a time on a host (the same lock as the Temporal CLI's build).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { onPath, sleepMs, takeLock } from './temporal-cli.mjs';

export const PEBBLE_VERSION = '2.10.1';

export function pebbleCacheDir() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'vc-console', `pebble-v${PEBBLE_VERSION}`);
}

function works(bin) {
  return spawnSync(bin, ['-version'], { encoding: 'utf8' }).status === 0;
}

/** A working Pebble, or undefined. Never builds. */
export function findPebble() {
  if (process.env.PEBBLE) {
    if (works(process.env.PEBBLE)) return process.env.PEBBLE;
    throw new Error(`PEBBLE is set to ${process.env.PEBBLE}, but running it with -version failed`);
  }
  const fromPath = onPath('pebble');
  if (fromPath && works(fromPath)) return fromPath;
  const cached = join(pebbleCacheDir(), 'pebble');
  if (existsSync(cached) && works(cached)) return cached;
  return undefined;
}

/** Finds Pebble or builds it into the cache. */
export function ensurePebble(log = (m) => console.error(m)) {
  const found = findPebble();
  if (found) return found;
  const dir = pebbleCacheDir();
  const goBin = onPath('go') || (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!goBin) {
    throw new Error(
      `Pebble (the test ACME CA) was not found (env PEBBLE, PATH, or ${dir}) and Go is not installed to build it.\n` +
        `Install Go (https://go.dev/dl/), or run GOBIN=${dir} go install github.com/letsencrypt/pebble/v2/cmd/pebble@v${PEBBLE_VERSION}\n` +
        'elsewhere and set PEBBLE=/path/to/pebble.',
    );
  }
  mkdirSync(dir, { recursive: true });
  const lock = join(dir, '.build-lock');
  if (!takeLock(lock)) {
    log(`[setup] Another process is building Pebble into ${dir}; waiting for it...`);
    for (;;) {
      sleepMs(2000);
      const ready = findPebble();
      if (ready) return ready;
      if (takeLock(lock)) break;
    }
  }
  try {
    log(`[setup] Building Pebble v${PEBBLE_VERSION} with Go into ${dir} (once)...`);
    execFileSync(goBin, ['install', `github.com/letsencrypt/pebble/v2/cmd/pebble@v${PEBBLE_VERSION}`], {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, GOBIN: dir, GOFLAGS: process.env.GOFLAGS || '-buildvcs=false' },
    });
    const built = join(dir, 'pebble');
    if (!works(built)) throw new Error(`Pebble was built at ${built} but does not run`);
    log(`[setup] Pebble ready: ${built}`);
    return built;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
