/**
 * Reshape (CONTRACT "Machines"): where the environment's database lives. `combined`: on the shared services
 * server beside the web server; `separate`: on a `database` server of its own, with a plan and a subscription.
 * `POST .../reshape` starts the `machines`/`reshape` task (workflows/reshape.ts) that copies the data into a
 * new database with a new login and switches the environment to it; the old one is kept until
 * `POST .../discard-old-database` (`machines`/`discard_old_database`). Prices come from the price list.
 */
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import type { Task } from '../../db/models/task';
import { Service } from '../../db/models/service';
import { Server } from '../../db/models/server';
import { errors } from '../../core/errors';
import { iso } from '../../core/time';
import { loadPriceList, monthlyPriceDelta, planById, type Plan, type PriceList } from '../../core/pricing';
import { startTask } from '../../core/tasks';

type Shape = 'combined' | 'separate';
interface EnvRow {
  id: string;
  team_id: string;
  project_id: string;
  name: string;
}

const noService = () =>
  errors.conflict(
    'no_database_service',
    'The environment has no PostgreSQL database service to reshape: add one first',
  );
const oldKept = () => errors.conflict('old_database_kept');

async function loadState(deps: Deps, envId: string) {
  const service = await Service.query(deps.knex).findOne({
    environment_id: envId,
    kind: 'postgresql',
    status: 'available',
  });
  const server = service?.server_id ? await Server.query(deps.knex).findById(service.server_id) : undefined;
  return { service, server };
}

/** What the current database server costs a month (0 when combined, or its plan is off the price list). */
const currentPrice = (list: PriceList, server: Server | undefined) =>
  server ? (planById(list, server.plan)?.monthly_price ?? 0) : 0;

export async function getReshape(deps: Deps, envId: string) {
  const list = loadPriceList(deps.config);
  const { service, server } = await loadState(deps, envId);
  const shape: Shape = service?.shape ?? 'combined';
  const current = currentPrice(list, server);
  const reason = !service
    ? 'The environment has no PostgreSQL database service: add one (Services) to give it a server of its own.'
    : service.old_database_name
      ? 'The old database of the last reshape is still kept: discard it first'
      : null;
  const choices = reason
    ? []
    : shape === 'combined'
      ? list.plans.map((p) => ({
          shape: 'separate' as const,
          plan: p.id,
          cpu: p.cpu,
          memory_mb: p.memory_mb,
          disk_gb: p.disk_gb,
          monthly_price: p.monthly_price,
          monthly_price_delta: monthlyPriceDelta(current, p.monthly_price),
        }))
      : [
          {
            shape: 'combined' as const,
            plan: null,
            cpu: null,
            memory_mb: null,
            disk_gb: null,
            monthly_price: 0,
            monthly_price_delta: monthlyPriceDelta(current, 0),
          },
        ];
  return {
    shape,
    service_id: service?.id ?? null,
    server_id: service?.shape === 'separate' ? (service.server_id ?? null) : null,
    old_database: service?.old_database_name
      ? { kept_since: iso(service.old_since!), server_id: service.old_server_id }
      : null,
    currency: list.currency,
    choices,
    unavailable_reason: reason,
  };
}

/**
 * Checks a reshape (the same for the preview and the task): the environment has a service, no old database,
 * and the shape is another one; `plan` only with `separate`, one of the price list (default: the service's
 * plan, else the list's default). Every fault of the body is named at once.
 */
async function checkReshape(deps: Deps, envId: string, input: { shape: Shape; plan?: string }) {
  const list = loadPriceList(deps.config);
  const { service, server } = await loadState(deps, envId);
  if (!service) throw noService();
  const fields: Record<string, string> = {};
  if (input.shape === service.shape) fields.shape = `is the shape the database has (${service.shape})`;
  let plan: Plan | undefined;
  if (input.shape === 'combined' && input.plan !== undefined)
    fields.plan = 'is for shape "separate" only: a combined database has no server of its own';
  if (input.shape === 'separate') {
    plan = planById(list, input.plan ?? service.plan) ?? (input.plan ? undefined : planById(list, list.default_plan));
    if (!plan) fields.plan = `is not a plan of the price list (${list.plans.map((p) => p.id).join(', ')})`;
  }
  if (Object.keys(fields).length) throw errors.invalid(fields);
  if (service.old_database_name) throw oldKept();
  return { list, service, server, plan };
}

export async function previewReshape(deps: Deps, env: EnvRow, input: { shape: Shape; plan?: string }) {
  const { list, server, plan } = await checkReshape(deps, env.id, input);
  const delta = monthlyPriceDelta(currentPrice(list, server), plan?.monthly_price ?? 0);
  const changes =
    input.shape === 'separate'
      ? [
          `A database server ${env.name}-database on plan ${plan!.id} (${plan!.cpu} CPU, ${plan!.memory_mb} MB, ${plan!.disk_gb} GB) for ${Number(plan!.monthly_price).toFixed(2)} ${list.currency} a month`,
        ]
      : [`The database server ${server?.name ?? 'of the environment'} ends once the old database is discarded`];
  changes.push(
    'The data is copied into a new database with a new login; writes pause during the copy, reads go on',
    'DATABASE_URL and PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE change; the web process restarts with them',
    'The old database is kept until you discard it',
  );
  return { shape: input.shape, plan: plan?.id ?? null, monthly_price_delta: delta, currency: list.currency, changes };
}

export async function requestReshape(
  deps: Deps,
  actor: Actor,
  env: EnvRow,
  input: { shape: Shape; plan?: string },
): Promise<Task> {
  const { list, service, plan } = await checkReshape(deps, env.id, input);
  return startTask(deps, actor, {
    type: 'reshape',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: {
      service_id: service.id,
      from_shape: service.shape,
      shape: input.shape,
      plan: plan
        ? {
            id: plan.id,
            cpu: plan.cpu,
            memory_mb: plan.memory_mb,
            disk_gb: plan.disk_gb,
            monthly_price: plan.monthly_price,
            currency: list.currency,
          }
        : null,
    },
    summary:
      input.shape === 'separate'
        ? `move the database of ${env.name} to a server of its own (${plan!.id})`
        : `move the database of ${env.name} back onto the shared server`,
  });
}

export async function requestDiscardOldDatabase(deps: Deps, actor: Actor, env: EnvRow): Promise<Task> {
  const service = await Service.query(deps.knex).findOne({ environment_id: env.id, kind: 'postgresql' });
  if (!service?.old_database_name) throw errors.conflict('no_old_database');
  return startTask(deps, actor, {
    type: 'discard_old_database',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: { service_id: service.id },
    summary: `discard the old database of ${env.name}`,
  });
}
