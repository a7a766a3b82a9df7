/**
 * Projects' log forwarding settings (CONTRACT "Logs"), shared by the API and the shippers of the edge
 * and the worker. The http URL is sealed at rest; only `openDestination` sees it in the clear.
 */
import type { Knex } from 'knex';
import { openBuffer, seal } from '../../system/crypto';
import type { Secrets } from '../../system/secrets';
import { aad } from '../aad';

/** A project's log destination, opened: the shape logs/send.ts sends (declared here: db/ imports nothing above). */
type Destination =
  | { kind: 'http'; name: string; url: string }
  | { kind: 'syslog'; name: string; host: string; port: number; protocol: 'udp' | 'tcp' };

export const DEFAULT_KEEP_DAYS = 7;

export interface LogSettingsRow {
  project_id: string;
  kind: 'http' | 'syslog' | null;
  name: string | null;
  url_sealed: string | null;
  host: string | null;
  port: number | null;
  protocol: 'udp' | 'tcp' | null;
  can_send: boolean;
  last_sent_at: Date | null;
  last_error: string | null;
  keep_days_on_machine: number;
}

export async function getLogSettings(knex: Knex, projectId: string): Promise<LogSettingsRow | undefined> {
  return knex('project_log_settings').where({ project_id: projectId }).first();
}

/** The destination in the clear (for sending), or null. */
export function openDestination(
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>,
  row: LogSettingsRow | undefined,
): Destination | null {
  if (!row?.kind || !row.name) return null;
  if (row.kind === 'http' && row.url_sealed) {
    return {
      kind: 'http',
      name: row.name,
      url: openBuffer(secrets, row.url_sealed, aad.projectLogs(row.project_id)).toString(),
    };
  }
  if (row.kind === 'syslog' && row.host && row.port && row.protocol) {
    return { kind: 'syslog', name: row.name, host: row.host, port: row.port, protocol: row.protocol };
  }
  return null;
}

/** The columns that store a destination (null clears it). */
export function destinationColumns(
  secrets: Pick<Secrets, 'encryptionKey'>,
  projectId: string,
  dest: Destination | null,
): Record<string, unknown> {
  const none = { kind: null, name: null, url_sealed: null, host: null, port: null, protocol: null };
  if (!dest) return none;
  if (dest.kind === 'http')
    return { ...none, kind: 'http', name: dest.name, url_sealed: seal(secrets, dest.url, aad.projectLogs(projectId)) };
  return { ...none, kind: 'syslog', name: dest.name, host: dest.host, port: dest.port, protocol: dest.protocol };
}

export interface ShippingTarget {
  projectId: string;
  keepDays: number;
  row: LogSettingsRow | undefined;
}

/** Every environment's project and that project's settings (the shippers' view, refreshed every few seconds). */
export async function loadShippingTargets(knex: Knex): Promise<Map<string, ShippingTarget>> {
  const [envs, rows] = await Promise.all([
    knex('environments').select('id', 'project_id'),
    knex('project_log_settings').select('*') as Promise<LogSettingsRow[]>,
  ]);
  const byProject = new Map(rows.map((r) => [r.project_id, r]));
  const out = new Map<string, ShippingTarget>();
  for (const e of envs as Array<{ id: string; project_id: string }>) {
    const row = byProject.get(e.project_id);
    out.set(e.id, { projectId: e.project_id, keepDays: row?.keep_days_on_machine ?? DEFAULT_KEEP_DAYS, row });
  }
  return out;
}

/** What the shippers learn as they send (throttled by them): when lines last arrived, or why not. */
export async function recordDelivery(knex: Knex, projectId: string, error: string | null): Promise<void> {
  await knex('project_log_settings')
    .where({ project_id: projectId })
    .update(error ? { last_error: error } : { last_sent_at: knex.fn.now(), last_error: null });
}

/** The project of each environment of `envIds` that exists (a shipper reads the secret values of its lines by it). */
export async function projectsOfEnvironments(knex: Knex, envIds: string[]): Promise<Map<string, string>> {
  const rows: Array<{ id: string; project_id: string }> = await knex('environments')
    .whereIn('id', envIds)
    .select('id', 'project_id');
  return new Map(rows.map((r) => [r.id, r.project_id]));
}
