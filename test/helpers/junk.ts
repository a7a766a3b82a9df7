import type { RouteDef } from '../../api/lib/define-route';

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

/** Bodies: junk as the whole body, and junk in each field the route's schema names. */
export function bodiesFor(route: RouteDef): unknown[] {
  const bodies: unknown[] = [...JUNK];
  const shape = (route.body as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  for (const field of Object.keys(shape)) for (const value of JUNK) bodies.push({ [field]: value });
  return bodies;
}

/** Query strings: junk in each parameter the route's schema names, and an unknown one. */
export function queriesFor(route: RouteDef): string[] {
  const shape = (route.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  const values = ['', '-1', '0', '1e9', 'abc', '%00', 'null', '[]', 'x'.repeat(3000)];
  const queries = ['?unknown=1'];
  for (const name of Object.keys(shape)) for (const v of values) queries.push(`?${name}=${encodeURIComponent(v)}`);
  return queries;
}

