/**
 * Reshape on the local provider (workflows/reshape.ts runs these): the environment's database is copied into a
 * new database with a new role and password (activities/data/reshape-db.ts says where and why), verified table
 * by table, the web process restarted on the new DATABASE_URL, and only then the service record switched; the
 * old database is kept, read-only, until `discardOldDatabase` drops it and ends the subscription of the
 * `database` server it lived on. Each step can run again after a crash: the target's names are chosen once
 * and kept on the service row (`next_*`), the copy goes through a fresh `<name>_restore` every time.
 */
import { randomBytes } from 'node:crypto';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { open, seal } from '../../system/crypto';
import { type TaskLog, withTaskLog } from '../toolkit/task-log';
import { withHeartbeat } from '../toolkit/heartbeat';
import { copyDatabase } from '../data/backup-engine';
import { createServiceDatabase, dropServiceDatabase, serviceVariables, type ServiceLogin } from '../../host/pg-server';
import { serviceHost } from '../data/service-env';
import { countDifferences, freezeDatabase, thawDatabase } from '../data/reshape-db';
import { tableCounts } from '../data/row-counts';
import { endSubscriptionsOf, openSubscription, subscriptionItem } from '../../db/queries/subscriptions';
import { aad } from '../../db/aad';
import { userFault } from '../toolkit/failures';

const HEALTH_TIMEOUT_MS = 60_000;

interface ReshapeTarget {
  shape: 'combined' | 'separate';
  /** With `separate`: the plan of the new `database` server and its price (from the price list at the request). */
  plan?: { id: string; cpu: number; memory_mb: number; disk_gb: number; monthly_price: number; currency: string };
}

interface ServiceRow {
  id: string;
  team_id: string;
  project_id: string;
  environment_id: string;
  shape: 'combined' | 'separate';
  server_id: string | null;
  database_name: string;
  role_name: string;
  password_sealed: string;
  next_database_name: string | null;
  next_password_sealed: string | null;
  old_database_name: string | null;
  old_role_name: string | null;
  old_server_id: string | null;
}

const fail = (message: string) => userFault('ReshapeFailed', message);

export function createReshapeActivities(deps: Deps, provider: Provider) {
  const { supervisor } = provider;
  const { knex, config } = deps;

  const loadService = async (envId: string): Promise<ServiceRow> => {
    const row = await knex('services')
      .where({ environment_id: envId, kind: 'postgresql', status: 'available' })
      .first();
    if (!row) throw fail('the environment has no database service');
    return row as ServiceRow;
  };
  const currentLogin = (row: ServiceRow): ServiceLogin => ({
    database: row.database_name,
    role: row.role_name,
    password: open(deps.secrets, row.password_sealed, aad.servicePassword(row.id)),
  });
  const nextLogin = (row: ServiceRow): ServiceLogin | null =>
    row.next_database_name && row.next_password_sealed
      ? {
          database: row.next_database_name,
          role: row.next_database_name,
          password: open(deps.secrets, row.next_password_sealed, aad.servicePassword(row.id)),
        }
      : null;

  const withLog = <T>(taskId: string, fn: (log: TaskLog) => Promise<T>) => withTaskLog(deps, taskId, fn);

  return {
    /**
     * Creates the target database and role (names chosen once, kept on the row), stops writes to the current
     * database, copies it with pg_dump | pg_restore and compares the row count of every table.
     */
    async reshapeCopy(input: { taskId: string; environmentId: string }) {
      return withLog(input.taskId, (log) =>
        withHeartbeat(async () => {
          let row = await loadService(input.environmentId);
          if (!row.next_database_name) {
            const name = `svc_${randomBytes(10).toString('hex')}`;
            const password = randomBytes(24).toString('base64url');
            await knex('services')
              .where({ id: row.id })
              .whereNull('next_database_name')
              .update({
                next_database_name: name,
                next_password_sealed: seal(deps.secrets, password, aad.servicePassword(row.id)),
                updated_at: knex.fn.now(),
              });
            row = await loadService(input.environmentId);
          }
          const from = currentLogin(row);
          const to = nextLogin(row)!;
          log.line(`==> Creating database ${to.database} with a role and password of its own`);
          await createServiceDatabase(config, to);
          log.line(`==> Pausing writes: ${from.database} is read-only while it is copied (reads go on)`);
          await freezeDatabase(config, from.database);
          const pausedAt = Date.now();
          log.line(`==> Copying ${from.database} into ${to.database} (pg_dump -Fc | pg_restore)`);
          try {
            await copyDatabase({ config, from, to, onLine: (l) => log.line(l) });
          } catch (err) {
            throw fail(`the copy failed: ${(err as Error).message}`);
          }
          const [before, after] = await Promise.all([tableCounts(config, from), tableCounts(config, to)]);
          const differences = countDifferences(before, after);
          if (differences.length) throw fail(`the copy differs from the database: ${differences.join('; ')}`);
          const tables = Object.keys(before);
          for (const t of tables) log.line(`    ${t}: ${before[t]} rows in both`);
          const rows = Object.values(before).reduce((a, b) => a + b, 0);
          log.line(
            `==> Verified: ${tables.length} tables, ${rows} rows, the same in the copy (${Date.now() - pausedAt} ms)`,
          );
          return { tables: tables.length, rows, paused_at: pausedAt };
        }),
      );
    },

    /**
     * Restarts the web process on the copy's DATABASE_URL (health-checked; a process that does not get ready
     * leaves the old one serving and fails the step), then switches the service record in one transaction:
     * the copy becomes the service's database, the previous one is recorded as old, and the `database`
     * server is opened (with its subscription) or marked `old`.
     */
    async reshapeSwitch(input: { taskId: string; environmentId: string; target: ReshapeTarget; pausedAt: number }) {
      return withLog(input.taskId, (log) =>
        withHeartbeat(async () => {
          const row = await loadService(input.environmentId);
          const to = nextLogin(row);
          if (!to) {
            if (row.shape === input.target.shape) return { server_id: row.server_id, writes_paused_ms: null }; // switched already
            throw fail('the copy is missing');
          }
          const vars = serviceVariables(config, to, await serviceHost(deps, provider, input.environmentId));
          const r = await supervisor.restartWeb(input.environmentId, {
            env: vars,
            healthTimeoutMs: HEALTH_TIMEOUT_MS,
            onLine: (_s, line) => log.line(line),
          });
          if (!r.ok) throw fail(`the web process did not start on the new database: ${r.message}`);
          log.line(
            r.restarted
              ? '==> The web process runs on the new DATABASE_URL'
              : '==> No web process runs; the next one gets the new DATABASE_URL',
          );
          return knex.transaction(async (trx) => {
            const locked = (await trx('services').where({ id: row.id }).forUpdate().first()) as ServiceRow;
            if (!locked.next_database_name) return { server_id: locked.server_id, writes_paused_ms: null };
            const env = await trx('environments').where({ id: locked.environment_id }).first('name');
            let serverId: string | null = null;
            if (input.target.shape === 'separate') {
              const plan = input.target.plan!;
              const [server] = await trx('servers')
                .insert({
                  team_id: locked.team_id,
                  project_id: locked.project_id,
                  environment_id: locked.environment_id,
                  role: 'database',
                  name: `${env.name}-database`,
                  plan: plan.id,
                  cpu: plan.cpu,
                  memory_mb: plan.memory_mb,
                  disk_gb: plan.disk_gb,
                })
                .returning('id');
              serverId = server.id;
              await openSubscription(trx, {
                teamId: locked.team_id,
                projectId: locked.project_id,
                environmentId: locked.environment_id,
                kind: 'server',
                resourceId: server.id,
                item: await subscriptionItem(trx, 'Database server', plan.id, locked.environment_id),
                monthlyPrice: plan.monthly_price,
                currency: plan.currency,
              });
            } else if (locked.server_id) {
              await trx('servers').where({ id: locked.server_id }).update({ status: 'old', updated_at: trx.fn.now() });
            }
            await trx('services')
              .where({ id: locked.id })
              .update({
                shape: input.target.shape,
                server_id: serverId,
                database_name: locked.next_database_name,
                role_name: locked.next_database_name,
                password_sealed: locked.next_password_sealed,
                next_database_name: null,
                next_password_sealed: null,
                old_database_name: locked.database_name,
                old_role_name: locked.role_name,
                old_server_id: input.target.shape === 'combined' ? locked.server_id : null,
                old_since: trx.fn.now(),
                updated_at: trx.fn.now(),
              });
            const paused = Date.now() - input.pausedAt;
            log.line(`==> Writes were paused ${paused} ms (from the copy's start to the switch)`);
            log.line(`==> ${locked.database_name} is kept (read-only) until discard-old-database`);
            return { server_id: serverId, writes_paused_ms: paused as number | null };
          });
        }),
      );
    },

    /** A failed reshape: the current database takes writes again and the half-made copy is dropped. */
    async reshapeAbandon(input: { taskId: string; environmentId: string }) {
      return withLog(input.taskId, async (log) => {
        const row = await knex('services')
          .where({ environment_id: input.environmentId, kind: 'postgresql' })
          .first<ServiceRow | undefined>();
        if (!row?.next_database_name) return;
        await thawDatabase(config, row.database_name);
        await dropServiceDatabase(config, { database: row.next_database_name, role: row.next_database_name });
        await knex('services')
          .where({ id: row.id })
          .update({ next_database_name: null, next_password_sealed: null, updated_at: knex.fn.now() });
        log.line(`==> ${row.database_name} takes writes again; the copy ${row.next_database_name} was dropped`);
      });
    },

    /** Drops the database a reshape left behind and its role; ends the subscription of the server it lived on. */
    async discardOldDatabase(input: { taskId: string; environmentId: string }) {
      return withLog(input.taskId, async (log) => {
        const row = await knex('services')
          .where({ environment_id: input.environmentId, kind: 'postgresql' })
          .first<ServiceRow | undefined>();
        if (!row?.old_database_name) throw fail('the environment keeps no old database');
        log.line(`==> Dropping the old database ${row.old_database_name} and its role`);
        await dropServiceDatabase(config, { database: row.old_database_name, role: row.old_role_name! });
        await knex.transaction(async (trx) => {
          if (row.old_server_id) {
            const ended = await endSubscriptionsOf(trx, 'server', row.old_server_id);
            await trx('servers').where({ id: row.old_server_id }).delete();
            log.line(`==> The old database server is gone${ended ? ' and its subscription ended' : ''}`);
          }
          await trx('services').where({ id: row.id }).update({
            old_database_name: null,
            old_role_name: null,
            old_server_id: null,
            old_since: null,
            updated_at: trx.fn.now(),
          });
        });
        return { database: row.old_database_name };
      });
    },
  };
}

export type ReshapeActivities = ReturnType<typeof createReshapeActivities>;
