import type { Plugin } from 'esbuild';

export const ownUrls: Plugin;
export function writeWhole(file: string, contents: Uint8Array | string): void;
export function importEntry(root: string, entry: string): Promise<Record<string, unknown>>;
export const checkoutRoot: string;
