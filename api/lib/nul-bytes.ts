/**
 * PostgreSQL refuses the NUL character (U+0000) in text, so a NUL in any string a client sends would
 * end as a 500 at the database. One rule for every route, applied by the router before the route's own
 * schema: each string (or object key) with a NUL is refused with 422 under its field path.
 */
const NUL_REASON = 'must not contain the NUL character (\\u0000)';

/** The field paths (dotted, `body` for the whole value) of every string holding a NUL, at most `max`. */
export function nulFields(value: unknown, prefix = '', max = 20): Record<string, string> {
  const fields: Record<string, string> = {};
  const walk = (v: unknown, path: string, depth: number) => {
    if (Object.keys(fields).length >= max || depth > 64) return;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) fields[path || prefix || 'body'] = NUL_REASON;
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, join(path, String(i)), depth + 1));
    } else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        const at = join(path, k);
        if (k.includes('\u0000')) fields[at.replace(/\u0000/g, '\\u0000')] = NUL_REASON;
        else walk(item, at, depth + 1);
      }
    }
  };
  const join = (a: string, b: string) => [a, b].filter(Boolean).join('.');
  walk(value, prefix, 0);
  return fields;
}
