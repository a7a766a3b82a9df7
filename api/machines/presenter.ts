import type { Server } from '../../db/models/server';
import { serverMonthlyPrice, type PriceList } from '../../core/pricing';
import { iso } from '../../core/time';

/**
 * A server as clients see it: its size, how many instances run, and its monthly price from the price list
 * (the plan's price for each instance).
 */
export function presentServer({ server, list }: { server: Server; list: PriceList }) {
  return {
    id: server.id,
    name: server.name,
    team_id: server.team_id,
    project_id: server.project_id,
    environment_id: server.environment_id,
    role: server.role,
    plan: server.plan,
    cpu: Number(server.cpu),
    memory_mb: server.memory_mb,
    disk_gb: server.disk_gb,
    status: server.status,
    crash: server.role === 'web' ? (server.crash ?? null) : null,
    instances: server.instances,
    monthly_price: serverMonthlyPrice(list, server.plan, server.instances),
    currency: list.currency,
    created_at: iso(server.created_at),
  };
}
