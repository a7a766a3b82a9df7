import type { Knex } from 'knex';

/**
 * `edge_instances` is one row per data plane (an HAProxy and its DATA_DIR), no longer per control plane: its
 * id is kept in DATA_DIR/edge/haproxy/edge-id, so a control plane that adopts a running HAProxy carries on its
 * row, and a row whose control plane was SIGKILLed counts as not applied until one does (db/queries/edge-
 * routes.ts `awaitEdges`). `name` says which edge a task waits for (host and DATA_DIR).
 *
 * `project_log_settings` announces its changes on `vc_edge` too: the edge's request log shipper reads a
 * changed or removed destination at once (logs/shipper.ts), not at its next periodic refresh.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('edge_instances', (t) => {
    t.text('name');
  });
  await knex.raw(
    'CREATE TRIGGER project_log_settings_vc_edge AFTER INSERT OR UPDATE OF kind, name, url_sealed, host, port, protocol, keep_days_on_machine OR DELETE ON project_log_settings FOR EACH STATEMENT EXECUTE FUNCTION vc_edge_notify()',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS project_log_settings_vc_edge ON project_log_settings');
  await knex.schema.alterTable('edge_instances', (t) => {
    t.dropColumn('name');
  });
}
