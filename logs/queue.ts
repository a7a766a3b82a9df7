/**
 * An environment's queue of lines in the shipper (shipper.ts): JSON texts, their time first, bounded in lines and
 * in bytes. Lines are kept in blocks: one or more lines, each ended by a newline, as UTF-8 in a Buffer, as the
 * request log's reader hands a socket read's lines of one environment (request-reader.ts). A block is what a machine
 * file and an http batch are made of, encoded once: a line is never kept, joined, encoded or counted on its own. At
 * the edge's rate, one string per line kept a second (tens of thousands of them), joined and encoded once for the
 * machine file and once for the http batch, was most of the shipper's CPU after the reading.
 */
import type { LogLine } from './send';

export interface Queue {
  /** blocks of lines, UTF-8, each line ended by '\n' (oldest first) */
  blocks: Buffer[];
  /** the lines of each block (same index) */
  counts: number[];
  /** the lines of all blocks */
  lines: number;
  /** about how much memory `blocks` takes (sizeOf) */
  bytes: number;
  dropped: number;
  failures: number;
  retryAt: number;
  sending: boolean;
}

export const newQueue = (): Queue => ({
  blocks: [],
  counts: [],
  lines: 0,
  bytes: 0,
  dropped: 0,
  failures: 0,
  retryAt: 0,
  sending: false,
});

/** About what a block of `lines` lines takes in memory: its text and a fixed overhead a line (cheap: every read). */
export const sizeOf = (block: Buffer, lines: number) => 64 * lines + block.length;
const TIME_PREFIX = '{"time":"';
const TIME_BYTES = Buffer.from(TIME_PREFIX);
/** A block's time: its first line's. */
export const blockTime = (block: Buffer) =>
  block.length > TIME_BYTES.length + 24 && block.subarray(0, TIME_BYTES.length).equals(TIME_BYTES)
    ? block.toString('latin1', TIME_BYTES.length, TIME_BYTES.length + 24)
    : new Date().toISOString();
/** A block of lines given as text (each ended by '\n'). */
export const blockOf = (text: string) => Buffer.from(text);
/** A line as the shipper keeps it: JSON, its time first (no newline). */
export const lineText = ({ time, ...rest }: LogLine) => JSON.stringify({ time, ...rest });

/** Appends a block of `lines` lines. */
export function enqueue(q: Queue, block: Buffer, lines: number): void {
  q.blocks.push(block);
  q.counts.push(lines);
  q.lines += lines;
  q.bytes += sizeOf(block, lines);
}

/** Blocks taken off a queue: their lines (each block's, and in all) and their size (sizeOf). */
interface Taken {
  blocks: Buffer[];
  counts: number[];
  lines: number;
  bytes: number;
}

/**
 * Takes the oldest `max` lines at most off the queue, as blocks (a block is cut at a line's end when only part of
 * it fits).
 */
export function dequeue(q: Queue, max: number): Taken {
  let n = 0;
  let lines = 0;
  while (n < q.blocks.length && lines + q.counts[n] <= max) lines += q.counts[n++];
  const blocks = q.blocks.splice(0, n);
  const counts = q.counts.splice(0, n);
  if (lines < max && q.blocks.length > 0) {
    // the next block's first lines
    const block = q.blocks[0];
    let at = -1;
    for (let k = max - lines; k > 0; k--) at = block.indexOf(10, at + 1);
    const head = block.subarray(0, at + 1);
    q.blocks[0] = block.subarray(at + 1);
    q.counts[0] -= max - lines;
    blocks.push(head);
    counts.push(max - lines);
    lines = max;
  }
  let bytes = 0;
  for (const b of blocks) bytes += b.length;
  bytes += 64 * lines;
  q.lines -= lines;
  q.bytes -= bytes;
  return { blocks, counts, lines, bytes };
}

/** Puts blocks taken by `dequeue` back at the head of the queue (a send failed). */
export function requeue(q: Queue, taken: Taken): void {
  q.blocks = taken.blocks.concat(q.blocks);
  q.counts = taken.counts.concat(q.counts);
  q.lines += taken.lines;
  q.bytes += taken.bytes;
}

/** The lines of a block as text, without their newlines. */
export const splitLines = (block: Buffer): string[] => block.toString('utf8', 0, block.length - 1).split('\n');

/** The oldest lines past `maxQueued` lines or `maxQueuedBytes` go, counted as dropped. */
export function trimQueue(q: Queue, maxQueued: number, maxQueuedBytes: number): void {
  if (q.lines <= maxQueued && q.bytes <= maxQueuedBytes) return;
  // a large queue drops a sixteenth more at once: a full queue under load trims once per that many lines, not at
  // every read
  const slack = maxQueued >= 1024 ? maxQueued >> 4 : 0;
  const maxLines = maxQueued - slack;
  const maxBytes = slack ? maxQueuedBytes - (maxQueuedBytes >> 4) : maxQueuedBytes;
  let lines = q.lines;
  let bytes = q.bytes;
  let drop = 0;
  while (lines > maxLines || bytes > maxBytes) {
    // the oldest block whole, or its first lines when they are enough (dequeue cuts it)
    const over = Math.max(lines - maxLines, 0);
    const count = q.counts[0];
    if (bytes <= maxBytes && over < count) {
      dequeue(q, over);
      drop += over;
      break;
    }
    dequeue(q, count);
    drop += count;
    lines = q.lines;
    bytes = q.bytes;
  }
  q.dropped += drop;
}
