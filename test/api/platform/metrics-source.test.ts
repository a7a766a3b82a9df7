/**
 * The gauges read their database at scrape time (core/metrics.ts). The metrics are module-level, registered once
 * per process, and an API built later in the same process (a test worker running its next file, whose first
 * file's database is gone) must be read from its own database, not the first one given.
 */
import knexFactory from 'knex';
import { expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { insertHost } from '../../helpers/fixtures';

const t = useTestContext();

it("reads the database given last, after the first one's pool is closed", async () => {
  // a module instance of its own (the query makes it another module), as in a process that has built no API yet
  const fresh = '../../../core/metrics?first-database-closed';
  const metrics: typeof import('../../../core/metrics') = await import(/* @vite-ignore */ fresh);
  const first = knexFactory({ client: 'pg', connection: t.databaseUrl, pool: { min: 0, max: 1 } });
  metrics.watchTasks(first);
  metrics.watchHosts(first, 30);
  await first.destroy();
  metrics.watchTasks(t.deps.knex);
  metrics.watchHosts(t.deps.knex, 30);
  await insertHost(t, 'metrics-h1');
  const text = await metrics.registry.metrics();
  expect(text).toMatch(/vc_host_ready\{host="metrics-h1"\} 1/);
  expect(text).toContain('# TYPE vc_tasks gauge');
});
