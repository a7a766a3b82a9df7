import type { RouteDef } from '../../api/lib/define-route';

/** A "billion laughs" YAML document: nine levels of aliases of aliases (9^8 strings if expanded). */
export const ALIAS_BOMB = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((l, i) => `${l}: &${l} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
  '',
].join('\n');

/** Strings that pass loose checks but must never reach the database or a parser whole. */
const HOSTILE_STRINGS = ['ada@example.com\u0000', ALIAS_BOMB];

/** Values of every JSON type, and of the wrong shapes clients send. */
const JUNK: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  '',
  ' ',
  'x'.repeat(5000),
  '../../etc/passwd',
  "'; drop table users; --",
  '\u0000',
  '😀',
  [],
  [1, 'a'],
  {},
  { nested: { deeper: [null] } },
];

/**
 * Bodies: junk as the whole body, junk in each field the route's schema names, and each hostile string
 * in every field at once (so a route whose fields are all loose strings, like sign-in, meets it past
 * its "required" checks, and a manifest field meets the alias bomb).
 */
export function bodiesFor(route: RouteDef): unknown[] {
  const bodies: unknown[] = [...JUNK];
  const shape = (route.body as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  const fields = Object.keys(shape);
  for (const field of fields) for (const value of JUNK) bodies.push({ [field]: value });
  for (const value of fields.length > 0 ? HOSTILE_STRINGS : [])
    bodies.push(Object.fromEntries(fields.map((f) => [f, value])));
  return bodies;
}

/** Query strings: junk in each parameter the route's schema names, and an unknown one. */
export function queriesFor(route: RouteDef): string[] {
  const shape = (route.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  const values = ['', '-1', '0', '1e9', 'abc', 'a\u0000b', 'null', '[]', 'x'.repeat(3000)];
  const queries = ['?unknown=1'];
  for (const name of Object.keys(shape)) for (const v of values) queries.push(`?${name}=${encodeURIComponent(v)}`);
  return queries;
}
