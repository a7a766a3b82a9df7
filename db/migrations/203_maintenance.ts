import type { Knex } from 'knex';

/** Maintenance of an environment: while on, the edge answers 503 with the maintenance page and the note. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environments', (t) => {
    t.boolean('maintenance_on').notNullable().defaultTo(false);
    t.text('maintenance_note');
    t.timestamp('maintenance_since', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environments', (t) => {
    t.dropColumn('maintenance_on');
    t.dropColumn('maintenance_note');
    t.dropColumn('maintenance_since');
  });
}
