import type { Knex } from 'knex';
import type { Actor } from '../lib/actor';

/**
 * Writes one activity event of the backups area in the caller's transaction. (Goes through the platform's
 * recordActivity once it has landed.)
 */
export async function recordBackupsEvent(
  trx: Knex | Knex.Transaction,
  e: { teamId: string; actor: Actor | null; type: string; projectId?: string | null; environmentId?: string | null; address?: string | null; summary: string },
): Promise<void> {
  await trx('activity_events').insert({
    team_id: e.teamId,
    user_id: e.actor?.user.id ?? null,
    action: e.type,
    details: { kind: 'backups', via: e.actor?.via ?? 'system', project_id: e.projectId ?? null, environment_id: e.environmentId ?? null, address: e.address ?? null, summary: e.summary },
  });
}
