/**
 * An environment's queue of lines in the shipper (shipper.ts): JSON texts, their time first, bounded in lines and
 * in bytes.
 */
import type { LogLine } from './send';

export interface Queue {
  /** JSON texts */
  lines: string[];
  /** about how much memory `lines` takes (sizeOf) */
  bytes: number;
  dropped: number;
  failures: number;
  retryAt: number;
  sending: boolean;
}

/** About what a line takes in memory: its text and a fixed overhead (cheap: every request). */
export const sizeOf = (line: string) => 64 + line.length;
export const sizeOfAll = (lines: string[]) => lines.reduce((n, l) => n + sizeOf(l), 0);
const TIME_PREFIX = '{"time":"';
/** A line's time (ISO): its first field. */
export const timeOf = (line: string) =>
  line.startsWith(TIME_PREFIX) ? line.slice(TIME_PREFIX.length, TIME_PREFIX.length + 24) : new Date().toISOString();
/** A line as the shipper keeps it: JSON, its time first. */
export const lineText = ({ time, ...rest }: LogLine) => JSON.stringify({ time, ...rest });

/** The oldest lines past `maxQueued` lines or `maxQueuedBytes` go, counted as dropped. */
export function trimQueue(q: Queue, maxQueued: number, maxQueuedBytes: number): void {
  if (q.lines.length <= maxQueued && q.bytes <= maxQueuedBytes) return;
  // a large queue drops a sixteenth more at once: a full queue under load splices once per that many lines,
  // not at every push (a splice of 10,000 lines a request)
  const slack = maxQueued >= 1024 ? maxQueued >> 4 : 0;
  let drop = Math.min(q.lines.length, Math.max(0, q.lines.length - maxQueued + slack));
  let bytes = q.bytes;
  for (let i = 0; i < drop; i++) bytes -= sizeOf(q.lines[i]);
  const maxBytes = slack ? maxQueuedBytes - (maxQueuedBytes >> 4) : maxQueuedBytes;
  if (bytes > maxQueuedBytes) while (drop < q.lines.length && bytes > maxBytes) bytes -= sizeOf(q.lines[drop++]);
  if (drop === 0) return;
  q.lines.splice(0, drop);
  q.bytes = bytes;
  q.dropped += drop;
}
