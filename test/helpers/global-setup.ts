import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startTemporalDevServer, type DevServer } from '../../processes/temporal';
import { bundleWorkflows } from '../../processes/workflow-bundle';
import { processBundles } from '../../processes/process-bundles';
import { createDatabase, dropDatabase, withDatabase } from '../../db/database';
import { createKnex } from '../../db/knex';
import { migrateLatest } from '../../db/migrate';
import { freePort } from './ports';
import { killProcessesMentioning } from './processes';
import { startServicesServer } from './services-server';
import { ensureTestPostgres, ensureTestRedis } from './run-services';
import { closeServicesPort } from '../../host/provider/sandbox';
// @ts-expect-error plain JS module shared with scripts/bootstrap.mjs
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    templateDatabase: string;
    adminDatabaseUrl: string;
    /** Superuser URL of the password-auth server database services live on (SERVICES_DATABASE_URL). */
    servicesDatabaseUrl: string;
    /** TEST_REDIS_URL, or the run's own redis-server when nothing answers there. */
    redisUrl: string;
    workflowBundlePath: string;
    /** VC_PROCESS_BUNDLES of the processes the tests start: the run's bundles (processes/process-bundles.ts). */
    processBundles: string;
    runDir: string;
  }
}

let server: DevServer | undefined;
let templateDatabase: string | undefined;
let runDir: string | undefined;
let services: Awaited<ReturnType<typeof startServicesServer>> | undefined;
let postgres: Awaited<ReturnType<typeof ensureTestPostgres>> | undefined;
let redis: Awaited<ReturnType<typeof ensureTestRedis>> | undefined;
let adminDatabaseUrl = TEST_DATABASE_URL;

/**
 * One real Temporal dev server per run, one migrated template database, one workflow bundle, and one
 * password-auth PostgreSQL for the environments' database services (sandboxes reach it, never 5432).
 * PostgreSQL and Redis are the machine's (TEST_DATABASE_URL, TEST_REDIS_URL) when they answer, else the run's own.
 */
export async function setup(project: TestProject) {
  runDir = mkdtempSync(join(tmpdir(), 'vc-test-'));
  // Traversable: the sandboxed environments' uids reach their own directories under the files' DATA_DIRs.
  chmodSync(runDir, 0o711);
  // Seen read-only by every sandbox (SANDBOX_SHARED_DIRS of the tests): the build gates live there.
  mkdirSync(join(runDir, 'shared'), { mode: 0o755 });
  postgres = await ensureTestPostgres(TEST_DATABASE_URL, runDir, (m) => console.log(m));
  adminDatabaseUrl = postgres.url;
  redis = await ensureTestRedis(TEST_REDIS_URL, runDir, (m) => console.log(m));
  const cli = ensureTemporalCli((m: string) => console.log(m));
  const [port, servicesPort] = await Promise.all([freePort(), freePort()]);
  const template = `vc_tpl_${process.pid}_${Date.now().toString(36)}`;
  templateDatabase = template;
  const admin = adminDatabaseUrl;
  // side by side (about 12 s one after the other, 5 s together): the bundle, the services server, the Temporal
  // dev server, the migrated template
  const [bundle, bundles] = await Promise.all([
    bundleWorkflows(),
    processBundles(fileURLToPath(new URL('../..', import.meta.url))),
    startServicesServer(runDir, servicesPort).then((s) => {
      services = s;
    }),
    startTemporalDevServer({
      cliPath: cli,
      dataDir: runDir,
      port,
      namespace: 'default',
      headless: true,
      inMemory: true,
    }).then((s) => {
      server = s;
    }),
    (async () => {
      await createDatabase(admin, template);
      const knex = createKnex(withDatabase(admin, template));
      try {
        await migrateLatest(knex);
      } finally {
        await knex.destroy();
      }
    })(),
  ]);
  const workflowBundlePath = join(runDir, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, bundle.code);
  project.provide('temporalAddress', server!.address);
  project.provide('templateDatabase', template);
  project.provide('adminDatabaseUrl', adminDatabaseUrl);
  project.provide('servicesDatabaseUrl', services!.url);
  project.provide('redisUrl', redis.url);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('processBundles', JSON.stringify(bundles));
  project.provide('runDir', runDir);
}

export async function teardown() {
  await server?.stop();
  await services?.stop().catch(() => undefined);
  // Its port is free again: no sandbox may reach whatever listens there next.
  if (services) await closeServicesPort(Number(new URL(services.url).port)).catch(() => undefined);
  if (templateDatabase) await dropDatabase(adminDatabaseUrl, templateDatabase).catch(() => undefined);
  await postgres?.stop().catch(() => undefined);
  await redis?.stop().catch(() => undefined);
  if (runDir) {
    // What a test file left running (its edge's HAProxy and Varnish when its teardown did not run): nothing of a
    // run outlives it, spinning or answering on ports the next run reuses.
    const left = killProcessesMentioning(runDir);
    if (left.length > 0)
      console.warn(
        `[test] killed ${left.length} process(es) left under ${runDir}:\n  ${left.join('\n  ').slice(0, 2000)}`,
      );
    rmSync(runDir, { recursive: true, force: true });
  }
}
