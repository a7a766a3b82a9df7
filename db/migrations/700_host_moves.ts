import type { Knex } from 'knex';

/**
 * Moving environments between hosts (CONTRACT "Hosts", issue 26 items 7 and 8):
 *
 * - `servers.status` may be `host_lost`: the `web` server of an environment whose host is lost and whose volume
 *   held data at the last usage sample (it is not moved from its release; `evacuate --confirm` restores it).
 * - `hosts.lost_at`: when the system took the host as lost and moved (or marked) its environments. Set once per
 *   loss; the host is `drained` from then on. A host that heartbeats again while it is set has rejoined: its
 *   instances of environments placed elsewhere are stopped, then it is cleared (the host stays `drained`).
 * (Whether a volume held anything at a sample is `resource_samples.volume_bytes` > 0, migration 740: the last
 * sample decides whether a lost host's environment restarts elsewhere from its release.)
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE servers DROP CONSTRAINT IF EXISTS servers_status_check');
  await knex.raw(
    `ALTER TABLE servers ADD CONSTRAINT servers_status_check CHECK (status IN ('running', 'resizing', 'rebooting', 'old', 'host_lost'))`,
  );
  await knex.schema.alterTable('hosts', (t) => {
    t.timestamp('lost_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.dropColumn('lost_at');
  });
  await knex('servers').where({ status: 'host_lost' }).update({ status: 'running' });
  await knex.raw('ALTER TABLE servers DROP CONSTRAINT IF EXISTS servers_status_check');
  await knex.raw(
    `ALTER TABLE servers ADD CONSTRAINT servers_status_check CHECK (status IN ('running', 'resizing', 'rebooting', 'old'))`,
  );
}
