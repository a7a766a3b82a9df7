import type { Knex } from 'knex';

/**
 * Reshape (CONTRACT "Machines"): where an environment's database service lives.
 * - services.shape: `combined` (the database on the shared services server, beside the web server) or
 *   `separate` (a `database` server of its own: services.server_id names it);
 * - services.next_*: the database (and its role, of the same name) and sealed password a running reshape copies into (null otherwise);
 * - services.old_*: the database and role a reshape left behind, kept until
 *   `discard-old-database` drops it; old_server_id is the `database` server it lived on (when the database
 *   moved back to combined), whose subscription ends at the discard;
 * - servers.status `old`: a database server whose database was moved away, kept until the discard.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('services', (t) => {
    t.text('shape').notNullable().defaultTo('combined').checkIn(['combined', 'separate']);
    t.text('next_database_name');
    t.text('next_password_sealed');
    t.text('old_database_name');
    t.text('old_role_name');
    t.uuid('old_server_id');
    t.timestamp('old_since', { useTz: true });
  });
  await knex.raw('ALTER TABLE servers DROP CONSTRAINT IF EXISTS servers_status_check');
  await knex.raw(
    `ALTER TABLE servers ADD CONSTRAINT servers_status_check CHECK (status IN ('running', 'resizing', 'rebooting', 'old'))`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex('servers').where({ status: 'old' }).delete();
  await knex.raw('ALTER TABLE servers DROP CONSTRAINT IF EXISTS servers_status_check');
  await knex.raw(
    `ALTER TABLE servers ADD CONSTRAINT servers_status_check CHECK (status IN ('running', 'resizing', 'rebooting'))`,
  );
  await knex.schema.alterTable('services', (t) => {
    for (const c of [
      'shape',
      'next_database_name',
      'next_password_sealed',
      'old_database_name',
      'old_role_name',
      'old_server_id',
      'old_since',
    ])
      t.dropColumn(c);
  });
}
