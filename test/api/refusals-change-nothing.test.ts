import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes';
import { useTestContext } from '../helpers/context';
import { createDeployWorld } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import { bodiesFor } from '../helpers/junk';

// No worker: nothing runs in the background between two requests, so any change is the request's own; but the
// file's host heartbeats (test/helpers/context.ts), so `hosts` is left out of the fingerprint (no route writes it).
const t = useTestContext();

/** A fingerprint of every table's rows (one query), to see that a refused request changed nothing. */
async function databaseFingerprint(): Promise<string> {
  const tables: Array<{ table_name: string }> = await t.deps
    .knex('information_schema.tables')
    .where({ table_schema: 'public', table_type: 'BASE TABLE' })
    .whereNot('table_name', 'like', 'knex_%')
    .whereNot('table_name', 'hosts')
    .select('table_name');
  const parts = tables.map(
    ({ table_name }) =>
      `select '${table_name}' || ':' || md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from "${table_name}" x`,
  );
  const row = await t.deps.knex.raw(`select string_agg(h, ',' order by h) as fp from (${parts.join(' union all ')}) f`);
  return row.rows[0].fp as string;
}

describe('a refused request', () => {
  it('changes nothing (every 4xx of a walk of junk bodies over every write route, as a signed-in owner)', {
    timeout: 600_000,
  }, async () => {
    const w = await createDeployWorld(t);
    const owner = await sessionAgent(t, w.owner);
    const ids: Record<string, string> = { teams: w.team.id, projects: w.project.id, environments: w.environment.id };
    const routes = allRoutes().filter((r) => r.method !== 'get' && r.body);
    let refused = 0;
    const changed: string[] = [];
    let before = await databaseFingerprint();
    const send = (path: string, route: (typeof routes)[number], body: unknown) =>
      owner.request(route.method.toUpperCase(), path, { body });
    for (const route of routes) {
      const path = route.path.replace(/\{([a-z_]+)\}/gi, (_, name: string) => {
        const area = route.path.split('/')[1];
        return name === 'id' && ids[area] ? ids[area] : crypto.randomUUID();
      });
      // A route's junk is sent as a batch and the database compared once after it; only a route that
      // accepted something (or changed anything) is walked again one request at a time.
      const bodies = bodiesFor(route);
      const statuses = [];
      for (const body of bodies) statuses.push((await send(path, route, body)).status);
      let after = await databaseFingerprint();
      const allRefused = statuses.every((s) => s >= 400 && s < 500);
      if (allRefused && after === before) {
        refused += statuses.length;
        continue;
      }
      before = after;
      for (const body of bodies) {
        const res = await send(path, route, body);
        after = await databaseFingerprint();
        if (res.status >= 400 && res.status < 500) {
          refused++;
          if (after !== before)
            changed.push(`${route.method.toUpperCase()} ${path} ${JSON.stringify(body).slice(0, 80)} -> ${res.status}`);
        }
        before = after;
      }
    }
    expect(refused).toBeGreaterThan(500);
    expect(changed).toEqual([]);
  });
});
