/**
 * Scale (CONTRACT "Machines"): how many web instances of the live release run behind the edge. `instances`
 * is a property of the environment's `web` server (each instance runs on its plan and costs its price);
 * `max` is SCALE_MAX. Changing it is a task (`machines`/`scale`, exclusive on the environment).
 */
import { Server } from '../../db/models/server';
import type { Task } from '../../db/models/task';
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { loadPriceList, monthlyPriceDelta } from '../../core/pricing';
import { startTask } from '../../core/tasks';
import { serverMonthlyPrice } from '../../core/pricing';
import { assertGrowthFits } from '../../core/placement';
import { placementSettings } from './service';

async function webServer(deps: Deps, environmentId: string): Promise<Server> {
  const server = await Server.query(deps.knex).findOne({ environment_id: environmentId, role: 'web' });
  if (!server) throw errors.notFound('web server of this environment');
  return server;
}

/** `{instances, max}`, and what every count from 1 to max would cost a month. */
export async function getScale(deps: Deps, environmentId: string) {
  const server = await webServer(deps, environmentId);
  const list = loadPriceList(deps.config);
  const max = deps.config.scaleMax;
  const current = serverMonthlyPrice(list, server.plan, server.instances) ?? 0;
  return {
    instances: server.instances,
    max,
    plan: server.plan,
    currency: list.currency,
    choices: Array.from({ length: max }, (_, i) => i + 1)
      .filter((n) => n !== server.instances)
      .map((n) => {
        const price = serverMonthlyPrice(list, server.plan, n);
        return { instances: n, monthly_price: price, monthly_price_delta: monthlyPriceDelta(current, price ?? 0) };
      }),
  };
}

/** Starts the scale task; 422 on `instances` outside 1..max or equal to the current count. */
export async function requestScale(deps: Deps, actor: Actor, environmentId: string, instances: number): Promise<Task> {
  const server = await webServer(deps, environmentId);
  const max = deps.config.scaleMax;
  if (instances < 1 || instances > max) throw errors.invalid({ instances: `must be from 1 to ${max}` });
  if (instances === server.instances)
    throw errors.invalid({ instances: `is the number of instances the environment runs (${instances})` });
  const plan = { id: server.plan, memory_mb: server.memory_mb };
  return startTask(deps, actor, {
    type: 'scale',
    teamId: server.team_id,
    projectId: server.project_id,
    environmentId,
    params: { server_id: server.id, server_name: server.name, from: server.instances, instances },
    summary: `scale ${server.name} from ${server.instances} to ${instances} instance${instances === 1 ? '' : 's'}`,
    guard: (trx) => assertGrowthFits(trx, placementSettings(deps), server, { plan, instances }),
  });
}
