export declare const PEBBLE_VERSION: string;
export declare function pebbleCacheDir(): string;
export declare function findPebble(): string | undefined;
export declare function ensurePebble(log?: (message: string) => void): string;
