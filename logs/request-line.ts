/**
 * HAProxy's request log line as the shipper's reader (request-reader.ts) finds it: where its JSON's fields are, and
 * what is done with a line HAProxy could not fill. The format is edge/request-log/haproxy.ts's `LOG_FORMAT`.
 */

/** An escape pair: `\\` kept, `\/` made `/` (left to right, so `\\/` is a backslash and a slash). */
const UNSLASH = /\\([\\/])/g;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** HAProxy's JSON starts so; the environment id follows (36 characters), then its closing quote. */
export const ENV_PREFIX = '{"environment_id":"';
export const ENV_AT = ENV_PREFIX.length;
export const ENV_END = ENV_AT + 36;
/** The line's last field when the request had no User-Agent header (HAProxy's `-`), and what it becomes. */
export const NO_AGENT = ',"user_agent":"-"}';
export const NULL_AGENT = ',"user_agent":null}';

/**
 * A line HAProxy could not fill (a negative status or time, an empty field: HAProxy writes `-`), or of a request
 * without a User-Agent (`agents` 0): parsed, given CONTRACT's defaults, written again.
 */
export function repaired(json: string, agents: number): string | null {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(json);
  } catch {
    return null;
  }
  const text = (v: unknown) => (typeof v === 'string' && v !== '-' ? v : null);
  raw.method = text(raw.method) ?? 'GET';
  raw.path = text(raw.path) ?? '/';
  raw.client_address = text(raw.client_address);
  if (!(agents > 0)) raw.user_agent = null;
  const status = Number(raw.status);
  raw.status = Number.isFinite(status) && status > 0 ? status : 499;
  raw.bytes = Math.max(0, Number(raw.bytes) || 0);
  raw.duration_ms = Math.max(0, Number(raw.duration_ms) || 0);
  return JSON.stringify(raw);
}

/**
 * HAProxy's json converter writes `/` as `\/`: valid JSON, but not what a reader greps for (nor what
 * JSON.stringify writes). Done once per socket read (many lines), not per line: a plain replace, unless an
 * escaped backslash could stand before a slash (the line's prefix has no backslash, so the pairs are the JSON's).
 */
export function unslashed(text: string): string {
  if (!text.includes('\\/')) return text;
  if (!text.includes('\\\\')) return text.replaceAll('\\/', '/');
  return text.replace(UNSLASH, (m, c) => (c === '/' ? '/' : m));
}
