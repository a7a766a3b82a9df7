import type { Knex } from 'knex';

/**
 * Hourly sums of resource samples, kept by PostgreSQL itself: a statement trigger on resource_samples adds
 * every inserted batch to its hours (whoever writes the samples: the sampler, a restore, the benchmark).
 * Windows of days read these (2,160 rows for 90 days) instead of 129,600 minute samples; a bin's average is
 * its sums over its sample count, the same average the minute samples give. The prune deletes both.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE resource_hourly (
      environment_id uuid NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
      hour timestamptz NOT NULL,
      samples integer NOT NULL,
      cpu_sum double precision NOT NULL,
      memory_sum bigint NOT NULL,
      disk_sum bigint NOT NULL,
      PRIMARY KEY (environment_id, hour) INCLUDE (samples, cpu_sum, memory_sum, disk_sum)
    )`);
  await knex.raw('CREATE INDEX resource_hourly_hour_index ON resource_hourly (hour)');
  await knex.raw(`
    CREATE FUNCTION resource_samples_to_hourly() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO resource_hourly AS h (environment_id, hour, samples, cpu_sum, memory_sum, disk_sum)
      SELECT environment_id, date_bin('1 hour', at, TIMESTAMPTZ 'epoch'), count(*), sum(cpu),
             sum(memory_bytes)::bigint, sum(disk_bytes)::bigint
        FROM inserted
       GROUP BY 1, 2
      ON CONFLICT (environment_id, hour) DO UPDATE
         SET samples = h.samples + excluded.samples,
             cpu_sum = h.cpu_sum + excluded.cpu_sum,
             memory_sum = h.memory_sum + excluded.memory_sum,
             disk_sum = h.disk_sum + excluded.disk_sum;
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER resource_samples_to_hourly AFTER INSERT ON resource_samples
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION resource_samples_to_hourly()`);
  await knex.raw(`
    INSERT INTO resource_hourly (environment_id, hour, samples, cpu_sum, memory_sum, disk_sum)
    SELECT environment_id, date_bin('1 hour', at, TIMESTAMPTZ 'epoch'), count(*), sum(cpu), sum(memory_bytes)::bigint, sum(disk_bytes)::bigint
      FROM resource_samples GROUP BY 1, 2`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS resource_samples_to_hourly ON resource_samples');
  await knex.raw('DROP FUNCTION IF EXISTS resource_samples_to_hourly()');
  await knex.raw('DROP TABLE IF EXISTS resource_hourly');
}
