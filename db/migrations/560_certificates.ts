import type { Knex } from 'knex';

/**
 * Automatic HTTPS (CONTRACT "Certificates", docs/https.md).
 *
 * - `acme_accounts`: one ACME account per directory URL; its private key sealed (system/crypto).
 * - `certificates`: one per domain (it goes with the domain: deleted with it, moved with it). The chain is
 *   public; the private key is sealed. `status` pending|issued|failed (no row: `none`); `attempts` counts the
 *   failed attempts of the current issuing task, `next_attempt_at` is when a failed one is tried again (once
 *   a day), `task_id` the issuing or renewing task now running.
 * - `acme_challenges`: the HTTP-01 tokens the edge answers on EDGE_PORT at /.well-known/acme-challenge/<token>
 *   for its hostname only; announced on `vc_edge` like every table the edge reads, as are `certificates`
 *   (the edge writes the PEM files HAProxy loads).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('acme_accounts', (t) => {
    t.text('directory_url').primary();
    t.text('account_key_sealed').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('certificates', (t) => {
    t.uuid('domain_id').primary().references('domains.id').onDelete('CASCADE');
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'issued', 'failed']);
    t.text('issuer');
    t.text('serial');
    t.timestamp('not_before', { useTz: true });
    t.timestamp('expires_at', { useTz: true });
    /** The leaf and its chain (PEM): public. */
    t.text('certificate_pem');
    /** The leaf's private key, sealed with the aad `certificate:<domain id>`. */
    t.text('private_key_sealed');
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('last_error');
    t.timestamp('last_attempt_at', { useTz: true });
    t.timestamp('next_attempt_at', { useTz: true });
    t.uuid('task_id');
    t.timestamp('issued_at', { useTz: true });
    t.timestamps(true, true);
    t.index(['expires_at']);
  });
  await knex.schema.createTable('acme_challenges', (t) => {
    t.text('token').primary();
    t.text('hostname').notNullable();
    t.text('key_authorization').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['hostname']);
  });
  for (const table of ['certificates', 'acme_challenges'])
    await knex.raw(
      `CREATE TRIGGER ${table}_vc_edge AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION vc_edge_notify()`,
    );
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['certificates', 'acme_challenges'])
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_vc_edge ON ${table}`);
  await knex.schema.dropTableIfExists('acme_challenges');
  await knex.schema.dropTableIfExists('certificates');
  await knex.schema.dropTableIfExists('acme_accounts');
}
