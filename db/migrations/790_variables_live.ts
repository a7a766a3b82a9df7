import type { Knex } from 'knex';

/**
 * `environments.variables_live`: the variables its live processes were started with, as `{digest, at}`: a keyed
 * digest of the effective set (names and values; db/queries/variables.ts `variablesDigest`, never a value) and when
 * they got it. Written when a deploy, redeploy, rollback, move or variables apply puts processes live; null when not
 * known (nothing went live since, or a retried go-live whose processes another attempt started).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environments', (t) => {
    t.jsonb('variables_live');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environments', (t) => {
    t.dropColumn('variables_live');
  });
}
