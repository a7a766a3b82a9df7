import type { Knex } from 'knex';

/** The project edge, applied on every environment of the project (CONTRACT "The edge"). No row: no rule. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('project_edges', (t) => {
    t.uuid('project_id').primary().references('projects.id').onDelete('CASCADE');
    t.jsonb('blocked_addresses').notNullable().defaultTo('[]');
    t.jsonb('blocked_user_agents').notNullable().defaultTo('[]');
    /** {requests, per_seconds} or null. */
    t.jsonb('rate_limit');
    /** {max_age, include_subdomains, preload} or null. */
    t.jsonb('hsts');
    t.boolean('compression').notNullable().defaultTo(false);
    t.text('maintenance_page');
    t.text('error_page');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    'CREATE TRIGGER project_edges_vc_edge AFTER INSERT OR UPDATE OR DELETE ON project_edges FOR EACH STATEMENT EXECUTE FUNCTION vc_edge_notify()',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS project_edges_vc_edge ON project_edges');
  await knex.schema.dropTableIfExists('project_edges');
}
