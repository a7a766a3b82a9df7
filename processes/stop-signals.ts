/**
 * How `npm start`'s children (processes/supervision.ts) take their stop signals. The supervisor's death sends
 * each child its stop signal through `setpriv --pdeathsig`, and the kernel sends it once per supervisor thread
 * that exits: the parent-death signal follows the thread that started the child, and the child is handed to
 * another thread of the dying supervisor (its ppid unchanged) before it is handed to init and signalled again.
 * A `process.once` listener left that second signal to the default action, which killed the child in the middle
 * of its stop: the worker before it had stopped the tenants' web processes (2 runs of 3). So every signal comes
 * to `onSignal`, which must be idempotent.
 */
import { readFileSync } from 'node:fs';

export function onStopSignals(onSignal: (signal: NodeJS.Signals) => void): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => onSignal(sig));
}

/**
 * Whether the process that started this one (`supervisor`, the ppid at start) is gone or dying: this process
 * was handed to another parent, or the supervisor is exiting (a zombie leader whose last threads are leaving).
 */
export function parentGone(supervisor: number): boolean {
  if (process.ppid !== supervisor) return true;
  try {
    return /^State:\s+[ZX]/m.test(readFileSync(`/proc/${supervisor}/status`, 'utf8'));
  } catch {
    return process.platform === 'linux';
  }
}
