/**
 * Placement (CONTRACT "Hosts"): which host an environment's `web` server runs on.
 *
 * - A new `web` server goes to the `ready` host (not lost: heartbeat younger than HOST_LOST_SECONDS by the
 *   database's clock) with the most free memory, if its plan fits there. Free memory is the host's capacity
 *   less what the web servers placed on it take (each instance its plan's memory). `database` servers run on
 *   the services server and take nothing from a host. Placement counts memory: CPU is shared by time (each
 *   sandbox's cgroup caps its share) and disk is the volumes' quota within STORAGE_ROOTS.
 * - Nothing fits: 409 `no_capacity`, naming the largest plan that fits now. Host names and free memory are the
 *   operator's (`npm run hosts -- list`), never in a tenant's answer.
 * - A resize or scale that would no longer fit on the server's host: 409 `no_capacity`. Its room is checked and
 *   taken in the transaction that inserts its task, and held while the task is open.
 * - Placements are serialized by a transaction-scoped advisory lock, so two creations at once never both take
 *   the last room on a host: the caller places inside the transaction that inserts the server.
 *
 * A web server whose `host` is null was created before placement existed: it is the control plane's own host's
 * (the control plane's worker gives it that host when it starts, adoptUnplacedServers), and until then it is
 * read as the host of the process asking (`ownHost`).
 */
import type { Knex } from 'knex';
import { appError } from './errors';
import type { Plan } from './pricing';
import { hostFreeMemory, placeableHosts } from '../db/queries/hosts';
import { moveServerFromLostHost, setServerHost, webServerToPlace } from '../db/queries/machines';

/** The advisory lock every placement and capacity check takes (a constant of this module: "placement"). */
const PLACEMENT_LOCK = 0x706c6163;

const lockPlacement = (trx: Knex.Transaction) => trx.raw('SELECT pg_advisory_xact_lock(?)', [PLACEMENT_LOCK]);

interface PlacementSettings {
  hostLostSeconds: number;
  /** The price list's plans: the refusal names the largest that fits now. */
  plans: Plan[];
}

/** The refusal: the largest plan that fits now (by memory), or that none does. */
function noCapacity(plans: Plan[], freeMemoryMb: number, what: string): Error {
  const fitting = plans.filter((p) => p.memory_mb <= freeMemoryMb).sort((a, b) => b.memory_mb - a.memory_mb);
  const now = fitting[0]
    ? `the largest plan that fits now is ${fitting[0].id}`
    : 'no plan fits now; try again later, or ask the operator to add a host';
  return appError('no_capacity', `No host has room for ${what}: ${now}`);
}

/**
 * The host for a new web server of `plan` (one instance), taken under the placement lock of `trx` (insert the
 * server in the same transaction). `exclude`: hosts not to use (a lost host being replaced). 409 no_capacity.
 */
export async function placeWebServer(
  trx: Knex.Transaction,
  settings: PlacementSettings,
  plan: Pick<Plan, 'id' | 'memory_mb'>,
  exclude: string[] = [],
): Promise<string> {
  await lockPlacement(trx);
  const hosts = await placeableHosts(trx, settings.hostLostSeconds, exclude);
  const best = hosts[0];
  if (best && best.free_memory_mb >= plan.memory_mb) return best.name;
  throw noCapacity(settings.plans, best?.free_memory_mb ?? 0, `an environment on plan ${plan.id}`);
}

/**
 * Checks that a web server may grow from `from` to `to` MB in all (plan memory times instances) on its host;
 * 409 no_capacity when the host lacks the difference. Run as the task's guard (core/tasks.ts): in the transaction
 * that inserts the resize or scale task, under the placement lock, so that the room is held from then on (the
 * host's used memory counts an open task's growth, db/queries/hosts.ts). A server whose host is null is on
 * `ownHost`. A host no longer registered refuses nothing here (the work sent to it fails as host_unavailable).
 */
export async function assertGrowthFits(
  trx: Knex.Transaction,
  settings: PlacementSettings & { ownHost: string },
  server: { id: string; host?: string | null; memory_mb: number; instances: number },
  to: { plan: Pick<Plan, 'id' | 'memory_mb'>; instances: number },
): Promise<void> {
  const grow = to.plan.memory_mb * to.instances - server.memory_mb * server.instances;
  if (grow <= 0) return;
  await lockPlacement(trx);
  const free = await hostFreeMemory(trx, server.host ?? settings.ownHost, server.id);
  if (free === undefined || free >= grow) return;
  // what fits is what this server's share could become: its current memory plus the host's free memory
  const room = Math.floor((server.memory_mb * server.instances + free) / to.instances);
  const what =
    to.instances === server.instances
      ? `this server on plan ${to.plan.id}`
      : `${to.instances} instances of plan ${to.plan.id}`;
  throw noCapacity(settings.plans, room, what);
}

type Replacement =
  | { status: 'kept' }
  | { status: 'moved'; from: string; to: string }
  | { status: 'refused'; from: string; message: string };

/**
 * The host a server of `needMb` goes to, never `from` (as placeWebServer places a new one), or the refusal's
 * message naming the largest plan that fits.
 */
async function otherHostWithRoom(
  trx: Knex.Transaction,
  settings: PlacementSettings,
  from: string,
  needMb: number,
): Promise<{ host: string } | { refused: string }> {
  const hosts = await placeableHosts(trx, settings.hostLostSeconds, [from]);
  if (!hosts[0] || hosts[0].free_memory_mb < needMb)
    return { refused: noCapacity(settings.plans, hosts[0]?.free_memory_mb ?? 0, 'this environment').message };
  return { host: hosts[0].name };
}

/**
 * A deploy whose environment's host is lost re-places it (CONTRACT "Hosts"): its `web` server goes where a new
 * one would (placeWebServer), never back to the lost host, and `servers.host` says so; the deploy then starts it
 * there. `kept`: its host is alive (or it has none recorded: the control plane's own). `refused`: no other host
 * has room (the refusal's message, naming the largest plan that fits).
 */
export async function replaceFromLostHost(
  knex: Knex,
  settings: PlacementSettings,
  environmentId: string,
): Promise<Replacement> {
  return knex.transaction(async (trx) => {
    await lockPlacement(trx);
    const server = await webServerToPlace(trx, environmentId, settings.hostLostSeconds);
    // lost means its host is recorded (and its heartbeat stale)
    if (!server?.lost || server.host === null) return { status: 'kept' };
    const to = await otherHostWithRoom(trx, settings, server.host, server.memory_mb * server.instances);
    if ('refused' in to) return { status: 'refused', from: server.host, message: to.refused };
    // no longer on the lost host: not `host_lost` either (the deploy starts it there)
    await moveServerFromLostHost(trx, server.id, to.host);
    return { status: 'moved', from: server.host, to: to.host };
  });
}

type MovePlacement =
  | { status: 'placed'; from: string; to: string; fromLost: boolean }
  | { status: 'refused'; from: string; message: string };

/**
 * A move (CONTRACT "Hosts": a drain, a lost host, an evacuation) places the environment's `web` server again as
 * a new one would be placed (placeWebServer: a `ready` host, not lost, with room for its plan times its
 * instances), never on the host it is on now, and records it. `refused`: no other host has room (the refusal's
 * message names the largest plan that fits, never a host). A server with no host recorded is on `ownHost`.
 */
export async function placeMove(
  knex: Knex,
  settings: PlacementSettings & { ownHost: string },
  environmentId: string,
): Promise<MovePlacement> {
  return knex.transaction(async (trx) => {
    await lockPlacement(trx);
    const server = await webServerToPlace(trx, environmentId, settings.hostLostSeconds);
    if (!server) throw appError('not_found', 'This environment has no web server to move');
    const from: string = server.host ?? settings.ownHost;
    const to = await otherHostWithRoom(trx, settings, from, server.memory_mb * server.instances);
    if ('refused' in to) return { status: 'refused', from, message: to.refused };
    await setServerHost(trx, server.id, to.host);
    return { status: 'placed', from, to: to.host, fromLost: Boolean(server.lost) };
  });
}
