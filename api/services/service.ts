/**
 * Database services of an environment (CONTRACT "Services"). A `postgresql` service is created by a
 * `machines`/`service_create` task: a database and a login role of its own on the services server, its
 * password generated here and sealed at rest (never shown); the environment's processes get DATABASE_URL.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import type { Environment } from '../../db/models/environment';
import { Service } from '../../db/models/service';
import { errors } from '../../core/errors';
import { loadPriceList, monthlyPriceDelta, planById } from '../../core/pricing';
import { startTask } from '../../core/tasks';
import { seal } from '../../system/crypto';
import { serverMajorVersion } from '../../host/pg-server';
import { openSubscription, subscriptionItem } from '../../db/queries/subscriptions';
import { workerSettings } from '../../db/queries/worker-settings';
import { environmentHost } from '../../db/queries/hosts';
import { WORKER_STALE_MS } from '../../core/worker-readiness';
import { aad } from '../../db/aad';

type EnvRow = Pick<Environment, 'id' | 'team_id' | 'project_id' | 'name'>;

let versionCache: { at: number; versions: string[] } | undefined;
/** The PostgreSQL versions offered: the services server's own major version. */
async function versions(deps: Deps): Promise<string[]> {
  if (!versionCache || Date.now() - versionCache.at > 60_000)
    versionCache = { at: Date.now(), versions: [await serverMajorVersion(deps.config)] };
  return versionCache.versions;
}

export async function serviceChoices(deps: Deps) {
  return { data: [{ kind: 'postgresql', versions: await versions(deps), plans: loadPriceList(deps.config).plans }] };
}

async function checkChoice(deps: Deps, input: { kind: 'postgresql'; plan: string; version?: string }) {
  const plan = planById(loadPriceList(deps.config), input.plan);
  const offered = await versions(deps);
  const fields: Record<string, string> = {};
  if (!plan)
    fields.plan = `must be one of ${loadPriceList(deps.config)
      .plans.map((p) => p.id)
      .join(', ')}`;
  if (input.version !== undefined && !offered.includes(input.version))
    fields.version = `must be one of ${offered.join(', ')}`;
  if (Object.keys(fields).length) throw errors.invalid(fields);
  return { plan: plan!, version: input.version ?? offered[0] };
}

export async function previewService(
  deps: Deps,
  env: EnvRow,
  input: { kind: 'postgresql'; plan: string; version?: string },
) {
  const { plan, version } = await checkChoice(deps, input);
  const list = loadPriceList(deps.config);
  return {
    monthly_price_delta: monthlyPriceDelta(0, plan.monthly_price),
    currency: list.currency,
    changes: [
      `A PostgreSQL ${version} database for ${env.name} on plan ${plan.id} (${plan.cpu} CPU, ${plan.memory_mb} MB, ${plan.disk_gb} GB)`,
      'Its processes get DATABASE_URL and PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE; the web process restarts with them',
    ],
  };
}

export async function listServices(deps: Deps, envId: string) {
  const rows = await Service.query(deps.knex).where({ environment_id: envId }).orderBy('created_at');
  return rows;
}

export async function createService(
  deps: Deps,
  actor: Actor,
  env: EnvRow,
  input: { kind: 'postgresql'; plan: string; version?: string },
) {
  const { plan, version } = await checkChoice(deps, input);
  await checkServicesReachable(deps, env);
  const existing = await Service.query(deps.knex)
    .findOne({ environment_id: env.id, kind: input.kind })
    .whereNot({ status: 'failed' });
  if (existing)
    throw errors.conflict('service_exists', `The environment has a ${input.kind} service already`, {
      service_id: existing.id,
    });
  await Service.query(deps.knex).where({ environment_id: env.id, kind: input.kind, status: 'failed' }).delete();
  const id = randomUUID();
  const name = `svc_${id.replace(/-/g, '').slice(0, 20)}`;
  // The service and its subscription (a paid thing has an order from the start) in one transaction.
  await deps.knex.transaction(async (trx) => {
    await Service.query(trx).insert({
      id,
      team_id: env.team_id,
      project_id: env.project_id,
      environment_id: env.id,
      kind: input.kind,
      version,
      plan: plan.id,
      status: 'creating',
      database_name: name,
      role_name: name,
      password_sealed: seal(deps.secrets, randomBytes(24).toString('base64url'), aad.servicePassword(id)),
    });
    if (plan.monthly_price > 0) {
      await openSubscription(trx, {
        teamId: env.team_id,
        projectId: env.project_id,
        environmentId: env.id,
        kind: 'service',
        resourceId: id,
        item: await subscriptionItem(trx, `PostgreSQL ${version} service`, plan.id, env.id),
        monthlyPrice: plan.monthly_price,
        currency: loadPriceList(deps.config).currency,
      });
    }
  });
  try {
    const task = await startTask(deps, actor, {
      type: 'service_create',
      teamId: env.team_id,
      projectId: env.project_id,
      environmentId: env.id,
      params: { service_id: id, kind: input.kind, plan: plan.id, version },
      summary: `PostgreSQL ${version} service for ${env.name}`,
    });
    await Service.query(deps.knex).findById(id).patch({ task_id: task.id });
    return task;
  } catch (err) {
    await deps.knex.transaction(async (trx) => {
      await trx('subscriptions').where({ kind: 'service', resource_id: id }).delete();
      await Service.query(trx).deleteById(id);
    });
    throw err;
  }
}

/**
 * The services server as the worker of the environment's host found it at its start (its readiness row; no
 * host recorded, or no row of it: the freshest worker's): one that host's sandboxes cannot reach is refused now,
 * naming the host, rather than a service whose connections time out.
 */
async function checkServicesReachable(deps: Deps, env: EnvRow): Promise<void> {
  const host = (await environmentHost(deps.knex, env.id))?.name;
  const settings =
    (host ? await workerSettings(deps.knex, { staleMs: WORKER_STALE_MS, host }) : null) ??
    (await workerSettings(deps.knex, { staleMs: WORKER_STALE_MS }));
  const services = settings?.services;
  if (services && services.status !== 'ok')
    throw errors.conflict(
      'services_unreachable',
      `The environments' sandboxes${host ? ` on host ${host}` : ''} cannot reach the services server: ${services.reason}. To change${host ? ` on ${host}` : ''}: ${services.change}`,
      { reason: services.reason, setting: services.change, host: host ?? null },
    );
}
