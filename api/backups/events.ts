import type { Knex } from 'knex';
import type { Actor } from '../../core/actor';
import { recordActivity } from '../../db/queries/activity';

/** Writes one activity event of kind `backups` in the caller's transaction. */
export async function recordBackupsEvent(
  trx: Knex | Knex.Transaction,
  e: {
    teamId: string;
    actor: Actor | null;
    type: string;
    projectId?: string | null;
    environmentId?: string | null;
    address?: string | null;
    summary: string;
  },
): Promise<void> {
  await recordActivity(trx, { ...e, kind: 'backups' });
}
