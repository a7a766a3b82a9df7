import type { Server } from '../../db/models/server';
import { planById, type PriceList } from '../lib/pricing';
import { iso } from '../lib/time';

/** A server as clients see it: its size, and its plan's monthly price from the price list. */
export function presentServer(server: Server, list: PriceList) {
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
    monthly_price: planById(list, server.plan)?.monthly_price ?? null,
    currency: list.currency,
    created_at: iso(server.created_at),
  };
}
