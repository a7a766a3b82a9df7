/**
 * Machines: the servers environments run on and their plans (priced from the price list, core/pricing.ts),
 * resize and reboot as tasks, the build machine of an environment, and its resource usage. Every environment
 * gets a `web` server and a build machine when it is created (createEnvironmentMachines, in the creation's
 * transaction). Services take the row the router's scope loaded; the router has checked the permission.
 */
import type { Knex } from 'knex';
import type { Deps } from '../../system/deps';
import { Server } from '../../db/models/server';
import { BuildMachine } from '../../db/models/build-machine';
import { resourceSeries, type ResourceWindow } from '../../db/queries/resources';
import { loadPriceList, monthlyPriceDelta, planById, type PriceList } from '../../core/pricing';
import { errors } from '../../core/errors';
import type { Actor } from '../../core/actor';
import { reachableTeamIds } from '../lib/policy';
import { serverMonthlyPrice } from '../../core/pricing';
import { startTask } from '../../core/tasks';
import { recordActivity } from '../../db/queries/activity';
import type { Task } from '../../db/models/task';
import { assertGrowthFits, placeWebServer } from '../../core/placement';

/** What placement needs of the settings: the lost-host delay, the plans, and this process's own host. */
export const placementSettings = (deps: Deps) => ({
  hostLostSeconds: deps.config.hostLostSeconds,
  plans: priceList(deps).plans,
  ownHost: deps.config.hostName,
});

const priceList = (deps: Deps): PriceList => loadPriceList(deps.config);

/** The default build plan: the first plan of the first build provider of the price list. */
function defaultBuildPlan(list: PriceList) {
  const [provider, plans] = Object.entries(list.build_machines)[0];
  return { provider, plan: plans[0] };
}

/**
 * The environment's `web` server on the price list's default plan, placed on a host (core/placement.ts: 409
 * no_capacity when none has room), and its build machine on the default build plan.
 */
export async function createEnvironmentMachines(
  trx: Knex.Transaction,
  deps: Deps,
  env: { id: string; team_id: string; project_id: string; name: string },
): Promise<void> {
  const list = priceList(deps);
  const plan = planById(list, list.default_plan)!;
  const host = await placeWebServer(trx, placementSettings(deps), plan);
  await Server.query(trx).insert({
    team_id: env.team_id,
    project_id: env.project_id,
    environment_id: env.id,
    role: 'web',
    name: `${env.name}-web`,
    plan: plan.id,
    cpu: plan.cpu,
    memory_mb: plan.memory_mb,
    disk_gb: plan.disk_gb,
    host,
  } as Partial<Server>);
  const build = defaultBuildPlan(list);
  await BuildMachine.query(trx).insert({
    environment_id: env.id,
    provider: build.provider,
    plan: build.plan.id,
    cpu: build.plan.cpu,
    memory_mb: build.plan.memory_mb,
  } as Partial<BuildMachine>);
}

// ---- servers ------------------------------------------------------------------------------------

/** Servers of the teams the caller reaches (`team` narrows to one), oldest first. */
export async function listServers(deps: Deps, actor: Actor, query: { team?: string }) {
  let teamIds = await reachableTeamIds(deps.knex, actor);
  if (query.team) teamIds = teamIds.filter((id) => id === query.team);
  if (teamIds.length === 0) return [];
  const rows = await Server.query(deps.knex)
    .whereIn('team_id', teamIds)
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  const list = priceList(deps);
  return rows.map((server) => ({ server, list }));
}

/**
 * The server's plan and every other plan of the price list, with what each would change on the monthly bill
 * (the server's price is its plan's for each instance it runs).
 */
export function resizeChoices(deps: Deps, server: Server) {
  const list = priceList(deps);
  const instances = server.instances ?? 1;
  const current = serverMonthlyPrice(list, server.plan, instances) ?? 0;
  return {
    plan: server.plan,
    currency: list.currency,
    choices: list.plans
      .filter((p) => p.id !== server.plan)
      .map((p) => {
        const price = serverMonthlyPrice(list, p.id, instances) ?? 0;
        return {
          plan: p.id,
          cpu: p.cpu,
          memory_mb: p.memory_mb,
          disk_gb: p.disk_gb,
          monthly_price: price,
          monthly_price_delta: monthlyPriceDelta(current, price),
        };
      }),
  };
}

/** The plan a resize goes to: one of the price list, not the current one (422 on plan otherwise). */
export function resizeTarget(deps: Deps, server: Server, planId: string) {
  assertNotOld(server);
  const list = priceList(deps);
  const plan = planById(list, planId);
  if (!plan)
    throw errors.invalid({ plan: `is not a plan of the price list (${list.plans.map((p) => p.id).join(', ')})` });
  if (plan.id === server.plan) throw errors.invalid({ plan: 'is the plan the server has' });
  return plan;
}

/**
 * Starts the resize (`machines`/`resize`, one change at a time per environment): the plan's size goes into
 * the task's params, so the workflow needs no price list.
 */
export async function requestResize(deps: Deps, actor: Actor, server: Server, planId: string): Promise<Task> {
  const plan = resizeTarget(deps, server, planId);
  return startTask(deps, actor, {
    type: 'resize',
    teamId: server.team_id,
    projectId: server.project_id,
    environmentId: server.environment_id,
    params: {
      server_id: server.id,
      server_name: server.name,
      from_plan: server.plan,
      plan: plan.id,
      cpu: plan.cpu,
      memory_mb: plan.memory_mb,
      disk_gb: plan.disk_gb,
    },
    summary: `resize ${server.name} from ${server.plan} to ${plan.id}`,
    guard:
      server.role === 'web'
        ? (trx) => assertGrowthFits(trx, placementSettings(deps), server, { plan, instances: server.instances ?? 1 })
        : undefined,
  });
}

/** Starts the reboot (`machines`/`reboot`). */
export async function requestReboot(deps: Deps, actor: Actor, server: Server): Promise<Task> {
  assertNotOld(server);
  return startTask(deps, actor, {
    type: 'reboot',
    teamId: server.team_id,
    projectId: server.project_id,
    environmentId: server.environment_id,
    params: { server_id: server.id, server_name: server.name },
    summary: `reboot ${server.name}`,
  });
}

// ---- build machines -----------------------------------------------------------------------------

/** Build plans with what each would change on the monthly bill against the current build plan's price. */
const priced = (plans: PriceList['build_machines'][string], current: number) =>
  plans.map((p) => ({ ...p, monthly_price_delta: monthlyPriceDelta(current, p.monthly_price) }));

/** The monthly price of the environment's build machine now (0 when its plan is no longer on the list). */
function currentBuildPrice(list: PriceList, row: { provider: string; plan: string } | undefined): number {
  const current = row ?? { provider: defaultBuildPlan(list).provider, plan: defaultBuildPlan(list).plan.id };
  const plans = Object.hasOwn(list.build_machines, current.provider) ? list.build_machines[current.provider] : [];
  return plans.find((p) => p.id === current.plan)?.monthly_price ?? 0;
}

/** The environment's build machine (provider and plan) and what it could be. */
export async function getBuildMachine(deps: Deps, environmentId: string) {
  const list = priceList(deps);
  const row = await BuildMachine.query(deps.knex).findById(environmentId);
  const fallback = defaultBuildPlan(list);
  const current = currentBuildPrice(list, row);
  return {
    provider: row?.provider ?? fallback.provider,
    plan: row?.plan ?? fallback.plan.id,
    cpu: Number(row?.cpu ?? fallback.plan.cpu),
    memory_mb: row?.memory_mb ?? fallback.plan.memory_mb,
    currency: list.currency,
    providers: Object.entries(list.build_machines).map(([id, plans]) => ({ id, plans: priced(plans, current) })),
  };
}

/** One provider's build plans, priced against the environment's current one (422 on provider when unknown). */
export async function buildOptions(deps: Deps, environmentId: string, provider: string) {
  const list = priceList(deps);
  if (!Object.hasOwn(list.build_machines, provider)) {
    throw errors.invalid({ provider: `is not a build provider (${Object.keys(list.build_machines).join(', ')})` });
  }
  const current = currentBuildPrice(list, await BuildMachine.query(deps.knex).findById(environmentId));
  return { provider, currency: list.currency, plans: priced(list.build_machines[provider], current) };
}

/** Sets the plan the environment's builds run on; 422 naming provider or plan when either is unknown. */
export async function setBuildMachine(
  deps: Deps,
  environmentId: string,
  input: { provider: string; plan: string },
  trx?: Knex.Transaction,
) {
  const list = priceList(deps);
  if (!Object.hasOwn(list.build_machines, input.provider)) {
    throw errors.invalid({ provider: `is not a build provider (${Object.keys(list.build_machines).join(', ')})` });
  }
  const plan = list.build_machines[input.provider].find((p) => p.id === input.plan);
  if (!plan) {
    throw errors.invalid({
      plan: `is not a build plan of ${input.provider} (${list.build_machines[input.provider].map((p) => p.id).join(', ')})`,
    });
  }
  await (trx ?? deps.knex)('build_machines')
    .insert({
      environment_id: environmentId,
      provider: input.provider,
      plan: plan.id,
      cpu: plan.cpu,
      memory_mb: plan.memory_mb,
    })
    .onConflict('environment_id')
    .merge({
      provider: input.provider,
      plan: plan.id,
      cpu: plan.cpu,
      memory_mb: plan.memory_mb,
      updated_at: new Date(),
    });
  return plan;
}

/** Sets the environment's build machine and records the change (activity `machines`/`build_machine_set`). */
export async function changeBuildMachine(
  deps: Deps,
  actor: Actor,
  env: { id: string; team_id: string; project_id: string; name: string },
  input: { provider: string; plan: string },
) {
  await deps.knex.transaction(async (trx) => {
    const plan = await setBuildMachine(deps, env.id, input, trx);
    await recordActivity(trx, {
      teamId: env.team_id,
      actor,
      kind: 'machines',
      type: 'build_machine_set',
      projectId: env.project_id,
      environmentId: env.id,
      summary: `builds of ${env.name} run on ${input.provider}/${plan.id} (${plan.cpu} CPU, ${plan.memory_mb} MB)`,
    });
  });
  return getBuildMachine(deps, env.id);
}

// ---- resources ----------------------------------------------------------------------------------

export function environmentResources(deps: Deps, environmentId: string, window: ResourceWindow) {
  return resourceSeries(deps.knex, environmentId, window);
}

/** A database server a reshape moved away from is kept only until discard-old-database: 409 on any change. */
function assertNotOld(server: Server): void {
  if (server.status === 'old')
    throw errors.conflict(
      'conflict',
      'This database server only keeps the old database of a reshape until POST /environments/{id}/discard-old-database; it cannot be changed',
    );
}
