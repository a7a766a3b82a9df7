/**
 * What the test contexts of this process left running when their teardown did not run (a file's own afterAll
 * that throws makes vitest skip the context's): the edge's HAProxy and Varnish, a worker's children, spinning and
 * answering on the port range the next files take. They are stopped before the next file of this process starts
 * (test/helpers/between-files.ts, vitest runs several files in one process) and when the process exits.
 */
import { killProcessesMentioning } from './processes';

/** The data directories of this process's test contexts set up and not yet torn down (test/helpers/context.ts). */
const notTornDown = new Set<string>();

export function settingUp(dataDir: string): void {
  notTornDown.add(dataDir);
}

export function tornDown(dataDir: string): void {
  notTornDown.delete(dataDir);
}

/** Stops the processes of every context set up and not torn down. */
export function stopLeftBehind(): void {
  for (const dir of notTornDown) killProcessesMentioning(dir);
  notTornDown.clear();
}

process.once('exit', stopLeftBehind);
// vitest ends a worker's process with SIGTERM, whose default ends it without 'exit'
process.once('SIGTERM', () => {
  stopLeftBehind();
  process.exit(143);
});
