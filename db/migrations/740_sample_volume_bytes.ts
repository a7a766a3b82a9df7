import type { Knex } from 'knex';

/**
 * `resource_samples.volume_bytes`: the bytes of the environment's volume alone (its `files` disk), apart from
 * `disk_bytes` (the volume plus its directory of releases and HOME). Written by the sampler of the host the
 * environment runs on, so that the control plane knows whether a volume on another machine holds anything (the
 * backup window's schedule; a lost host's environments) without reading that machine's disk. Null: sampled
 * before this column.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('resource_samples', (t) => {
    t.bigInteger('volume_bytes');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('resource_samples', (t) => {
    t.dropColumn('volume_bytes');
  });
}
