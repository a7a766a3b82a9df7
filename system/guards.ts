export type CreationKind = 'invitations' | 'device-codes';

interface RateHeaders {
  'RateLimit-Limit': string;
  'RateLimit-Remaining': string;
  'RateLimit-Reset': string;
}

/**
 * The request guards of the spec:
 * - failed credentials per client address: `limit` failures within `windowSeconds` refuse the address
 *   for `blockSeconds`, whatever credential comes next; a working credential clears that count, while a
 *   daily cap per address never resets on success (one valid token cannot launder guesses);
 * - 600 requests a minute per personal access token (every answer counts, 304 included).
 * With REDIS_URL the counters are shared by every API process (keys under `RATE_LIMIT_PREFIX`);
 * otherwise they live in this process. While Redis cannot be reached, each process falls back to its
 * own in-memory counters rather than failing requests.
 * Deps carries them (system/deps.ts); createGuards (api/middleware/guards.ts) makes them, its refusals the
 * API's 429 errors.
 */
export interface Guards {
  /**
   * Throws 429 (with Retry-After) while the address is refused; otherwise answers how many consecutive
   * failures it has (so a working credential need clear nothing when there are none).
   */
  assertAddressAllowed(address: string): Promise<{ failures: number }>;
  /** Counts a credential that does not work. */
  recordFailure(address: string): Promise<void>;
  /** A working credential clears the consecutive count (not the daily cap). */
  recordSuccess(address: string): Promise<void>;
  /** Counts a token request; throws 429 beyond the ceiling. Returns the RateLimit-* headers. */
  consumeTokenRequest(tokenId: string): Promise<RateHeaders>;
  /**
   * Counts one creation of something that sends mail or holds a pending code (an invitation, a
   * command-line device code) for a client address; throws 429 rate_limited with Retry-After beyond
   * the hourly ceiling (INVITATIONS_PER_HOUR, DEVICE_CODES_PER_HOUR).
   */
  consumeCreation(kind: CreationKind, address: string): Promise<void>;
  close(): Promise<void>;
}
