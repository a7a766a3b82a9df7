import type { Writable } from 'node:stream';

export type SnapshotPart = 'database' | 'files';
export declare const PARTS: Record<number, SnapshotPart>;
export declare class SnapshotError extends Error {}
export declare function decryptSnapshot(
  key: Buffer,
  chunks: AsyncIterable<Buffer>,
  output: (part: SnapshotPart) => Writable,
): Promise<void>;
