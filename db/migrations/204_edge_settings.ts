import type { Knex } from 'knex';

/**
 * What the edge enforces in front of an environment: allowed client CIDRs, a Basic password (argon2id
 * hash only) and stickiness. A missing row means no rule. Changes are announced on `vc_edge`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('environment_edges', (t) => {
    t.uuid('environment_id').primary().references('environments.id').onDelete('CASCADE');
    t.jsonb('allowed_addresses').notNullable().defaultTo('[]');
    t.text('password_username');
    t.text('password_hash');
    t.boolean('stickiness').notNullable().defaultTo(false);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    'CREATE TRIGGER environment_edges_vc_edge AFTER INSERT OR UPDATE OR DELETE ON environment_edges FOR EACH STATEMENT EXECUTE FUNCTION vc_edge_notify()',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS environment_edges_vc_edge ON environment_edges');
  await knex.schema.dropTableIfExists('environment_edges');
}
