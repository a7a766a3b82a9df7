/**
 * One `npm start` per DATA_DIR. A second one on the same directory used to fail at its first port (the embedded
 * PostgreSQL's) and then, stopping, take down what it found left running there: the first one's HAProxy and
 * Varnish, so every tenant's site went dark until the first one's edge started them again. Now the second
 * finds the first one's pid in `DATA_DIR/run/start.pid` and stops before it starts or stops anything.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runDir } from '../system/run-state';

const lockFile = (dataDir: string) => join(runDir(dataDir), 'start.pid');

/** Whether `pid` is a living `npm start` or `npm run host` supervisor (processes/start.ts, processes/host.ts). */
function isSupervisor(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .some((a) => a.endsWith('processes/start.ts') || a.endsWith('processes/host.ts'));
  } catch {
    return false;
  }
}

/** Takes DATA_DIR for this process; returns the pid of the `npm start` that holds it already, if one does. */
export function claimDataDir(dataDir: string): number | null {
  mkdirSync(runDir(dataDir), { recursive: true, mode: 0o700 });
  const file = lockFile(dataDir);
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isSupervisor(holder)) return holder;
    rmSync(file, { force: true }); // left by one that was killed: ours now
  }
  return null;
}

/** Gives DATA_DIR up (only when this process holds it). */
export function releaseDataDir(dataDir: string): void {
  try {
    if (Number(readFileSync(lockFile(dataDir), 'utf8').trim()) === process.pid) rmSync(lockFile(dataDir));
  } catch {
    // not ours, or gone
  }
}
