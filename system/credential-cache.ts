import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import type { Logger } from './logger';

/**
 * A short-lived cache, in this API process, of personal access token look-ups (the token, its issuer
 * and the issuer's membership in the token's team), so that a token request costs no query for who is
 * calling. Revocation is not weakened:
 * - triggers on access_tokens, memberships and users send NOTIFY `vc_credentials` with the ids
 *   (migration 120); this process LISTENs on one dedicated connection and drops the entries named,
 *   so a revoked token, a changed role or a removed membership is in force here within milliseconds
 *   of the commit;
 * - while that connection is not listening (not yet connected, lost, reconnecting) nothing is read
 *   from or kept in the cache: every request looks up the database, as without a cache. A heartbeat
 *   notices a connection that died silently;
 * - writes to those tables through this process's own knex clear the cache at once, so a request
 *   that follows a revocation on the same process never sees the old row, even before the NOTIFY;
 * - a look-up that was running when any change arrived is not kept (it may have read the old row);
 * - entries live at most `ttlMs`; expiry is decided on every request from the token's expires_at.
 * Only tokens that work are cached; refusals always go to the database.
 */
export interface CredentialCache<T> {
  /** The entry for a key while listening and fresh. */
  get(key: string): T | undefined;
  /** Call before a look-up; pass the result to set(). */
  ticket(): number;
  /** Keeps the entry when no change arrived since `ticket` and the cache is listening. */
  set(key: string, value: T, ids: CredentialIds, ticket: number): void;
  /** Resolves once every change committed before this call has been applied (tests and tools). */
  settled(): Promise<void>;
  readonly listening: boolean;
  /** How many times the listen connection was lost since the process started (metrics, and tests). */
  readonly losses: number;
  close(): Promise<void>;
}

interface CredentialIds {
  tokenId: string;
  userId: string;
  teamId: string;
}

interface Entry<T> extends CredentialIds {
  value: T;
  until: number;
}

const CREDENTIALS_CHANNEL = 'vc_credentials';
const HEARTBEAT_MS = 5_000;
const HEARTBEAT_TIMEOUT_MS = 2_000;
const MAX_ENTRIES = 10_000;
const WATCHED_WRITE =
  /^\s*(?:with\b[\s\S]*?)?(?:update|delete\s+from|insert\s+into)\s+"?(?:access_tokens|memberships|users)\b/i;
/** authenticate.ts's once-a-minute last_used_at write changes nothing the look-up decides on. */
const LAST_USED_WRITE =
  /^update "access_tokens" set "last_used_at" = (?:\?|\$1) where "id" = (?:\?|\$2) and \("last_used_at" is null/;

export function createCredentialCache<T>(opts: {
  databaseUrl: string;
  knex: Knex;
  logger: Logger;
  ttlMs: number;
}): CredentialCache<T> {
  const { logger, ttlMs } = opts;
  const entries = new Map<string, Entry<T>>();
  const waiters = new Map<string, () => void>();
  let generation = 0;
  let client: pg.Client | undefined;
  let listening = false;
  let losses = 0;
  let closed = false;
  let retryMs = 250;
  let reconnect: NodeJS.Timeout | undefined;

  const clear = () => {
    generation += 1;
    entries.clear();
  };

  const drop = (change: Record<string, unknown>) => {
    generation += 1;
    for (const [key, e] of entries) {
      const hit =
        change.table === 'access_tokens'
          ? e.tokenId === change.id
          : change.table === 'memberships'
            ? e.userId === change.user_id && e.teamId === change.team_id
            : e.userId === change.user_id;
      if (hit) entries.delete(key);
    }
  };

  const onNotification = (msg: pg.Notification) => {
    if (msg.channel !== CREDENTIALS_CHANNEL) return;
    let change: Record<string, unknown>;
    try {
      change = JSON.parse(msg.payload ?? '');
    } catch {
      return clear();
    }
    if (typeof change.settled === 'string') {
      waiters.get(change.settled)?.();
      waiters.delete(change.settled);
      return;
    }
    drop(change);
  };

  const lost = (c: pg.Client, err?: Error) => {
    if (client !== c) return;
    client = undefined;
    listening = false;
    losses += 1;
    clear();
    for (const release of waiters.values()) release();
    waiters.clear();
    c.removeAllListeners('notification');
    void c.end().catch(() => undefined);
    if (closed) return;
    logger.warn(
      { err: err?.message },
      'credential cache: listen connection lost; token look-ups go to the database until it is back',
    );
    reconnect = setTimeout(() => void connect(), retryMs);
    retryMs = Math.min(retryMs * 2, 5_000);
  };

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({
      connectionString: opts.databaseUrl,
      keepAlive: true,
      application_name: 'vc-credential-cache',
    });
    client = c;
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c));
    c.on('notification', onNotification);
    try {
      await c.connect();
      await c.query(`LISTEN ${CREDENTIALS_CHANNEL}`);
      if (client !== c || closed) return;
      clear();
      listening = true;
      retryMs = 250;
    } catch (err) {
      lost(c, err as Error);
    }
  };

  const heartbeat = setInterval(() => {
    const c = client;
    if (!c || !listening) return;
    const timer = setTimeout(() => lost(c, new Error('heartbeat timed out')), HEARTBEAT_TIMEOUT_MS);
    c.query('SELECT 1').then(
      () => clearTimeout(timer),
      (err: Error) => {
        clearTimeout(timer);
        lost(c, err);
      },
    );
  }, HEARTBEAT_MS);
  heartbeat.unref();

  // Writes through this process's knex (requests, and tests' fixtures) clear the cache at once.
  // Before the statement runs and again once it has (a look-up in between may have read the old row).
  const onQuery = (q: { sql?: string }) => {
    if (q.sql && WATCHED_WRITE.test(q.sql) && !LAST_USED_WRITE.test(q.sql)) clear();
  };
  const onQueryResponse = (_response: unknown, q: { sql?: string }) => onQuery(q);
  opts.knex.on('query', onQuery);
  opts.knex.on('query-response', onQueryResponse);

  void connect();

  return {
    get(key) {
      if (!listening) return undefined;
      const e = entries.get(key);
      if (!e) return undefined;
      if (e.until <= Date.now()) {
        entries.delete(key);
        return undefined;
      }
      return e.value;
    },
    ticket: () => generation,
    set(key, value, ids, ticket) {
      if (!listening || ticket !== generation) return;
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entries.set(key, { ...ids, value, until: Date.now() + ttlMs });
    },
    async settled() {
      const c = client;
      if (!c || !listening) return;
      const id = randomUUID();
      const done = new Promise<void>((resolve) => waiters.set(id, resolve));
      await opts.knex.raw('SELECT pg_notify(?, ?)', [CREDENTIALS_CHANNEL, JSON.stringify({ settled: id })]);
      await done;
    },
    get listening() {
      return listening;
    },
    get losses() {
      return losses;
    },
    async close() {
      closed = true;
      clearInterval(heartbeat);
      if (reconnect) clearTimeout(reconnect);
      opts.knex.off('query', onQuery);
      opts.knex.off('query-response', onQueryResponse);
      const c = client;
      client = undefined;
      listening = false;
      entries.clear();
      for (const release of waiters.values()) release();
      if (c) await c.end().catch(() => undefined);
    },
  };
}
