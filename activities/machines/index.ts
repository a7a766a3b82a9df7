/**
 * Machine activities on the local provider: a server's web instances restarted one at a time, health-checked
 * (reboot; resize with the new plan's limits), and the server's record. A server whose environment has
 * nothing live has no process to restart: its record alone changes.
 */
import type { Deps } from '../../system/deps';
import type { Size } from '../../db/queries/machines';
import { endSubscriptionsOf, openSubscription, subscriptionItem } from '../../db/queries/subscriptions';
import { loadPriceList, planById } from '../../core/pricing';
import type { Provider } from '../../host/provider';
import { withTaskLog } from '../toolkit/task-log';
import { withHeartbeat } from '../toolkit/heartbeat';
import { planLimits } from './limits';
import { userFault } from '../toolkit/failures';
import { withPhases } from '../toolkit/phases';

const HEALTH_TIMEOUT_MS = 60_000;

interface ServerPlan {
  plan: string;
  cpu: number;
  memory_mb: number;
  disk_gb: number;
}

export function createMachineActivities(deps: Deps, provider: Provider) {
  const { supervisor } = provider;
  const { knex } = deps;
  const loadServer = async (serverId: string) => {
    const server = await knex('servers').where({ id: serverId }).first();
    if (!server) throw userFault('ServerMissing', 'the server no longer exists');
    return server as {
      id: string;
      environment_id: string;
      role: 'web' | 'database';
      name: string;
      cpu: string;
      memory_mb: number;
      plan: string;
    };
  };
  return {
    /** The server's status while a change runs on it (`resizing`, `rebooting`) and after (`running`). */
    async markServer(input: { serverId: string; status: 'running' | 'resizing' | 'rebooting' }): Promise<void> {
      // A server kept `old` (reshape, until discard-old-database) stays so.
      await knex('servers')
        .where({ id: input.serverId })
        .whereNot({ status: 'old' })
        .update({ status: input.status, updated_at: knex.fn.now() });
    },

    /**
     * Restarts the server's instances one at a time: each replacement must answer its health check before
     * the old instance stops (else the old one keeps serving and the task fails). `size`: the new plan's.
     */
    async restartServerInstances(input: {
      taskId: string;
      serverId: string;
      size?: Size;
    }): Promise<{ restarted: number }> {
      return withTaskLog(deps, input.taskId, async (log) => {
        return await withHeartbeat(async (signal) => {
          const server = await loadServer(input.serverId);
          const size = planLimits(
            deps.config,
            input.size ?? { cpu: Number(server.cpu), memoryMb: server.memory_mb, plan: server.plan },
          )!;
          if (server.role === 'database') {
            // The local provider keeps every service database in the one services cluster (see
            // activities/data/reshape-db.ts): a database server is its plan and price; no instance of its own.
            log.line(`==> ${server.name}: its database lives in the shared services cluster; no instance to restart`);
            return { restarted: 0 };
          }
          const count = supervisor.status(server.environment_id)?.instances.length ?? 0;
          log.line(
            `==> ${server.name}: ${count} instance${count === 1 ? '' : 's'}, one at a time, on ${size.cpu} CPU and ${size.memoryMb} MB`,
          );
          const r = await withPhases(deps, input.taskId, (phases) => {
            phases.mark('release_ready');
            return supervisor.restartWeb(server.environment_id, {
              limits: size,
              healthTimeoutMs: HEALTH_TIMEOUT_MS,
              onLine: (_s, line) => log.line(line),
              signal,
              onPhase: (phase) => phases.mark(phase),
            });
          });
          // a resize names the plan the server keeps (its row changes only once every instance is healthy)
          if (!r.ok)
            throw userFault(
              'RestartFailed',
              input.size ? `${r.message}; ${server.name} stays on ${server.plan}` : r.message,
            );
          log.line(
            r.restarted
              ? `==> ${server.name}: ${count} instance${count === 1 ? '' : 's'} restarted and healthy`
              : `==> ${server.name}: nothing is live; no instance to restart`,
          );
          return { restarted: r.restarted ? count : 0 };
        });
      });
    },

    /**
     * Runs `instances` web instances of the environment's live release (new ones healthy before they join the
     * edge, extra ones drained before they stop), then records the count on its `web` server. Nothing live:
     * only the record changes (the next deploy starts that many).
     */
    async scaleWebInstances(input: {
      taskId: string;
      serverId: string;
      instances: number;
    }): Promise<{ instances: number; changed: boolean }> {
      return withTaskLog(deps, input.taskId, async (log) => {
        return await withHeartbeat(async (signal) => {
          const server = await loadServer(input.serverId);
          const r = await withPhases(deps, input.taskId, (phases) => {
            phases.mark('release_ready');
            return supervisor.scale(server.environment_id, {
              instances: input.instances,
              healthTimeoutMs: HEALTH_TIMEOUT_MS,
              onLine: (_s, line) => log.line(line),
              signal,
              onPhase: (phase) => phases.mark(phase),
            });
          });
          if (!r.ok) throw userFault('RestartFailed', r.message);
          if (!r.changed) log.line(`==> ${server.name}: nothing is live; the next deploy starts ${r.instances}`);
          await knex('servers').where({ id: server.id }).update({ instances: r.instances, updated_at: knex.fn.now() });
          return { instances: r.instances, changed: r.changed };
        });
      });
    },

    /**
     * Records the server's new plan and size (after its instances run on it). The plan is paid from now on:
     * the server's running subscription ends and one at the new plan's price opens (CONTRACT "every paid
     * thing is a subscription"), in the same transaction; a retried call finds the plan recorded and
     * opens nothing twice.
     */
    async recordServerPlan(input: { serverId: string } & ServerPlan): Promise<void> {
      await knex.transaction(async (trx) => {
        const server = await trx('servers').where({ id: input.serverId }).forUpdate().first();
        if (!server) return;
        await trx('servers').where({ id: input.serverId }).update({
          plan: input.plan,
          cpu: input.cpu,
          memory_mb: input.memory_mb,
          disk_gb: input.disk_gb,
          status: 'running',
          updated_at: knex.fn.now(),
        });
        if (server.plan === input.plan) return;
        await endSubscriptionsOf(trx, 'server', server.id);
        const list = loadPriceList(deps.config);
        const price = planById(list, input.plan)?.monthly_price ?? 0;
        if (price <= 0) return;
        const role = `${String(server.role).charAt(0).toUpperCase()}${String(server.role).slice(1)} server`;
        await openSubscription(trx, {
          teamId: server.team_id,
          projectId: server.project_id,
          environmentId: server.environment_id,
          kind: 'server',
          resourceId: server.id,
          item: await subscriptionItem(trx, role, input.plan, server.environment_id),
          monthlyPrice: price,
          currency: list.currency,
        });
      });
    },
  };
}

export type MachineActivities = ReturnType<typeof createMachineActivities>;
