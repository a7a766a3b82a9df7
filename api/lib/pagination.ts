/**
 * Keyset pagination: `limit` (1-100) and an opaque `before` cursor handed out as `next_before`.
 * A cursor is base64url text `<kind>:<part>|<part>...`; its kind keeps a cursor of one list from being
 * accepted by another. A cursor a client cannot have been given is refused with 422 on `before`.
 */
import { z } from 'zod';

const LIMIT_MESSAGE = 'must be a whole number from 1 to 100';

/** `limit` as a query parameter: a whole number from 1 to `max`, `fallback` when absent. */
export function limitParam(fallback: number, max = 100) {
  return z.coerce
    .number(LIMIT_MESSAGE)
    .int(LIMIT_MESSAGE)
    .min(1, `must be at least 1 (${LIMIT_MESSAGE})`)
    .max(max, `must be at most ${max}`)
    .default(fallback);
}

export function encodeCursor(kind: string, parts: Array<string | number>): string {
  return Buffer.from(`${kind}:${parts.join('|')}`, 'utf8').toString('base64url');
}

/** The parts of a cursor of `kind`, or undefined when it is not one. */
function decodeCursor(kind: string, cursor: string): string[] | undefined {
  if (!/^[A-Za-z0-9_-]{1,300}$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(`${kind}:`)) return undefined;
  return text.slice(kind.length + 1).split('|');
}

const NOT_A_CURSOR = 'is not a cursor from next_before';

/** `before` as a query parameter carrying one bigint sequence number (e.g. tasks.seq). */
export function seqCursorParam(kind: string) {
  return z
    .string()
    .max(300, NOT_A_CURSOR)
    .transform((raw, ctx) => {
      const parts = decodeCursor(kind, raw);
      const seq = parts?.length === 1 && /^[1-9]\d{0,17}$/.test(parts[0]) ? Number(parts[0]) : NaN;
      if (!Number.isSafeInteger(seq)) {
        ctx.addIssue({ code: 'custom', message: NOT_A_CURSOR });
        return z.NEVER;
      }
      return seq;
    });
}

/** `before` carrying an exact timestamp (microseconds, as text) and a uuid: `(created_at, id)` keysets. */
export function timeIdCursorParam(kind: string) {
  return z
    .string()
    .max(300, NOT_A_CURSOR)
    .transform((raw, ctx) => {
      const parts = decodeCursor(kind, raw);
      const ok =
        parts?.length === 2 &&
        /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/.test(parts[0]) &&
        !Number.isNaN(Date.parse(parts[0])) &&
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(parts[1]);
      if (!ok) {
        ctx.addIssue({ code: 'custom', message: NOT_A_CURSOR });
        return z.NEVER;
      }
      return { at: parts![0], id: parts![1] };
    });
}

/** Splits `limit + 1` fetched rows into the page and whether another page follows. */
export function pageOf<T>(rows: T[], limit: number): { page: T[]; more: boolean } {
  return { page: rows.slice(0, limit), more: rows.length > limit };
}
