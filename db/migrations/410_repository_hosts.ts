import type { Knex } from 'knex';

/**
 * A team's repository hosts (CONTRACT "Teams: ... hosts"): `https` with a user name and a token, `ssh`
 * with an Ed25519 key pair the console made. The token or private key is sealed (system/crypto.ts, bound
 * to the row); the public key is not a secret. One host of each kind a team.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('repository_hosts', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.text('kind').notNullable().checkIn(['https', 'ssh']);
    t.text('host').notNullable();
    t.text('username');
    t.text('public_key');
    t.text('sealed_secret').notNullable();
    t.uuid('created_by').references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['team_id', 'kind', 'host']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('repository_hosts');
}
