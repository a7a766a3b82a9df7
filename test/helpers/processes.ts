import { readdirSync, readlinkSync } from 'node:fs';

/**
 * Kills every process whose working directory lies under `dir` (the web processes and steps of a test
 * file's environments). Tests that SIGKILL a worker on purpose leave its supervised processes behind;
 * this keeps them from outliving the file. Linux (/proc) only; elsewhere it does nothing.
 */
export function killProcessesUnder(dir: string): number {
  let killed = 0;
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue; // gone, or not ours to read
    }
    if (cwd === dir || cwd.startsWith(`${dir}/`)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
        killed++;
      } catch {
        // already gone
      }
    }
  }
  return killed;
}
