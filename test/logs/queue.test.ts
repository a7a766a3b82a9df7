/**
 * The shipper's queue of blocks (logs/queue.ts): lines come and go in blocks, and a batch or a trim that needs part
 * of a block cuts it at a line's end, so that counts, bytes and the order of lines stay exact.
 */
import { describe, expect, it } from 'vitest';
import { dequeue, enqueue, newQueue, requeue, sizeOf, splitLines, trimQueue } from '../../logs/queue';

const block = (from: number, n: number) =>
  Buffer.from(Array.from({ length: n }, (_, i) => `{"time":"2026-12-01T00:00:00.000Z","n":${from + i}}\n`).join(''));
const numbers = (blocks: Buffer[]) => blocks.flatMap((b) => splitLines(b)).map((l) => JSON.parse(l).n);
const linesOf = (block: Buffer) => splitLines(block).length;
const bytesOf = (blocks: Buffer[]) => blocks.reduce((s, b) => s + sizeOf(b, linesOf(b)), 0);

describe('the shipper queue', () => {
  it('takes a batch of whole blocks and the first lines of the next, in order', () => {
    const q = newQueue();
    enqueue(q, block(0, 3), 3);
    enqueue(q, block(3, 4), 4);
    enqueue(q, block(7, 2), 2);
    const batch = dequeue(q, 5);
    expect(batch.lines).toBe(5);
    expect(numbers(batch.blocks)).toEqual([0, 1, 2, 3, 4]);
    expect([q.lines, q.counts, numbers(q.blocks)]).toEqual([4, [2, 2], [5, 6, 7, 8]]);
    expect(q.bytes).toBe(bytesOf(q.blocks));
    expect(batch.bytes).toBe(bytesOf(batch.blocks));
  });

  it('puts a failed batch back at the head, counts and bytes as before', () => {
    const q = newQueue();
    enqueue(q, block(0, 3), 3);
    enqueue(q, block(3, 4), 4);
    const before = { lines: q.lines, bytes: q.bytes };
    requeue(q, dequeue(q, 5));
    expect({ lines: q.lines, bytes: q.bytes }).toEqual(before);
    expect(numbers(q.blocks)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(q.counts).toEqual(q.blocks.map(linesOf));
  });

  it('drops exactly the oldest lines past the bound, cutting a block, and counts them', () => {
    const q = newQueue();
    enqueue(q, block(0, 3), 3);
    enqueue(q, block(3, 4), 4);
    trimQueue(q, 5, 1 << 20);
    expect([q.lines, q.dropped, numbers(q.blocks)]).toEqual([5, 2, [2, 3, 4, 5, 6]]);
    expect(q.bytes).toBe(bytesOf(q.blocks));
  });

  it('drops whole blocks past the bound in bytes', () => {
    const q = newQueue();
    for (let i = 1; i <= 4; i++) enqueue(q, block(i * 10, 10), 10); // lines of one size: n from 10 to 49
    const one = sizeOf(block(10, 10), 10);
    trimQueue(q, 1000, 2 * one);
    expect([q.lines, q.dropped, numbers(q.blocks)[0]]).toEqual([20, 20, 30]);
    expect(q.bytes).toBeLessThanOrEqual(2 * one);
  });
});
