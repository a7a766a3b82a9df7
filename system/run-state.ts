/**
 * What `npm start`'s supervisor (processes/supervision.ts) records about its children, in
 * `<DATA_DIR>/run/processes.json`: GET /health reads it (when the supervisor that wrote it is alive).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ProcessState {
  name: string;
  status: 'starting' | 'running' | 'restarting' | 'failed' | 'stopped';
  pid: number | null;
  restarts: number;
  /** How it last exited ("killed by SIGKILL", "exit code 1"), null when it never did. */
  last_exit: string | null;
  /** Why it was given up (status failed). */
  reason: string | null;
  since: string;
}

export interface ProcessesFile {
  supervisor_pid: number;
  processes: ProcessState[];
}

export const runDir = (dataDir: string) => join(dataDir, 'run');

/** The supervised processes, or null when no living `npm start` supervises this DATA_DIR. */
export function readProcesses(dataDir: string): ProcessState[] | null {
  let file: ProcessesFile;
  try {
    file = JSON.parse(readFileSync(join(runDir(dataDir), 'processes.json'), 'utf8'));
    process.kill(file.supervisor_pid, 0);
  } catch {
    return null;
  }
  return Array.isArray(file.processes) ? file.processes : null;
}
