/** What the machines of an environment are: shared by the API (reads) and the provider's activities (limits). */
import type { Knex } from 'knex';

export interface Size {
  cpu: number;
  memoryMb: number;
}

/** numeric columns come back from pg as strings */
const size = (row: { cpu: string | number; memory_mb: number }): Size => ({
  cpu: Number(row.cpu),
  memoryMb: row.memory_mb,
});

/** The size of the environment's web server (its processes' limits), or null when it has none. */
export async function webServerSize(knex: Knex, environmentId: string): Promise<Size | null> {
  const row = await knex('servers').where({ environment_id: environmentId, role: 'web' }).first('cpu', 'memory_mb');
  return row ? size(row) : null;
}

/** The size builds of the environment run with (its build machine's plan), or null when it has none. */
export async function buildMachineSize(knex: Knex, environmentId: string): Promise<Size | null> {
  const row = await knex('build_machines').where({ environment_id: environmentId }).first('cpu', 'memory_mb');
  return row ? size(row) : null;
}

/** How many web instances the environment's `web` server runs (1 without a server). */
export async function webServerInstances(knex: Knex, environmentId: string): Promise<number> {
  const row = await knex('servers').where({ environment_id: environmentId, role: 'web' }).first('instances');
  return row?.instances ?? 1;
}
