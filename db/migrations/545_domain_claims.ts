import type { Knex } from 'knex';

/**
 * Domain claims (CONTRACT "Domains"): pending claims of one hostname by different teams stand side by side;
 * a verified hostname is on one environment only (a unique index over verified rows), and a team claims a
 * hostname once. The verify throttle counts per team and hostname: each call keeps its team and hostname,
 * and outlives the domain (deleting and adding again does not reset it).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('domains', (t) => {
    t.dropUnique(['hostname']);
    t.unique(['team_id', 'hostname']);
    t.index(['hostname']);
  });
  await knex.raw(`CREATE UNIQUE INDEX domains_verified_hostname ON domains (hostname) WHERE status = 'verified'`);
  await knex.schema.alterTable('domain_verify_calls', (t) => {
    t.uuid('team_id').references('teams.id').onDelete('CASCADE');
    t.text('hostname');
  });
  await knex.raw(`
    UPDATE domain_verify_calls c SET team_id = d.team_id, hostname = d.hostname
    FROM domains d WHERE d.id = c.domain_id`);
  await knex.schema.alterTable('domain_verify_calls', (t) => {
    t.dropForeign(['domain_id']);
  });
  await knex.schema.alterTable('domain_verify_calls', (t) => {
    t.uuid('team_id').notNullable().alter();
    t.text('hostname').notNullable().alter();
    t.uuid('domain_id').nullable().alter();
    t.foreign('domain_id').references('domains.id').onDelete('SET NULL');
    t.index(['team_id', 'hostname', 'at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('domain_verify_calls').whereNull('domain_id').delete();
  await knex.schema.alterTable('domain_verify_calls', (t) => {
    t.dropIndex(['team_id', 'hostname', 'at']);
    t.dropForeign(['domain_id']);
  });
  await knex.schema.alterTable('domain_verify_calls', (t) => {
    t.dropColumn('team_id');
    t.dropColumn('hostname');
    t.uuid('domain_id').notNullable().alter();
    t.foreign('domain_id').references('domains.id').onDelete('CASCADE');
  });
  await knex.raw('DROP INDEX IF EXISTS domains_verified_hostname');
  await knex.schema.alterTable('domains', (t) => {
    t.dropIndex(['hostname']);
    t.dropUnique(['team_id', 'hostname']);
    t.unique(['hostname']);
  });
}
