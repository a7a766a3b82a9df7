// Pruning what has expired (the `prune-expired` schedule, workflow `pruneExpiredRecords`): rows that
// no request can use any more and that nothing shows. Each kind is deleted in batches, so no statement
// holds many locks or runs long on a large table.

import type { Deps } from '../../system/deps';
import { deleteCancelledEnvironments } from '../../core/projects/cancel';
import { expirePendingDomains } from '../../core/domains';
import { pruneDeletedEnvironments } from './deleted-environments';
import { deleteQueuedSnapshotObjects } from './snapshot-objects';
import { userFault } from '../toolkit/failures';
import { pruneExpiredKeys } from '../../db/queries/idempotency-keys';
import { deleteInBatches } from '../../db/queries/batches';

/** Ended sessions are kept a day (a session list may still show "ended just now"), then pruned. */
const ENDED_SESSION_RETENTION_DAYS = 1;
/**
 * Reminder rows are the once-only keys of token-expiry reminders; a reminder looks back 7 days
 * (REMINDER_INTERVAL_DAYS), so rows well past that have no use.
 */
const REMINDER_RETENTION_DAYS = 30;
const DAY_MS = 86_400_000;

export interface PruneExpiredInput {
  /** The instant the run acts for (ISO 8601); now when omitted. */
  asOf?: string;
}

export interface PruneExpiredResult {
  asOf: string;
  sessions: number;
  deviceCodes: number;
  emailConfirmations: number;
  unconfirmedUsers: number;
  tokenReminders: number;
  /** Environments of projects cancelled more than CANCELLED_PROJECT_KEEP_DAYS ago, deleted with their data. */
  cancelledEnvironments: number;
  /** Domains still pending 7 days after they were added (each with an activity event). */
  expiredDomains: number;
  /** Verify calls older than the hour the throttle looks at. */
  domainVerifyCalls: number;
  /** Deleted environments kept their 30 days: their tasks, activity and snapshots (objects too) removed. */
  deletedEnvironments: number;
  /** Snapshot objects of deleted projects deleted from their destinations. */
  snapshotObjects: number;
  /** Idempotency-Keys (and the answers kept under them) older than 24 hours, every caller's. */
  idempotencyKeys: number;
}

export function createMaintenanceActivities(deps: Deps) {
  return {
    async pruneExpired(input: PruneExpiredInput = {}): Promise<PruneExpiredResult> {
      const asOf = input.asOf ? new Date(input.asOf) : new Date();
      if (Number.isNaN(asOf.getTime())) throw userFault('InvalidInput', `asOf is not a date: "${input.asOf}"`);
      const { knex } = deps;
      // Sign-ups never confirmed whose code has expired (api/account/signup-service.ts): the address is free again.
      const unconfirmedUsers = await deleteInBatches(knex, 'users', (q) =>
        q
          .whereNull('email_confirmed_at')
          .where('created_at', '<', new Date(asOf.getTime() - DAY_MS))
          .whereNotExists((s) =>
            s
              .select(knex.raw('1'))
              .from('email_confirmations as c')
              .whereRaw('c.user_id = users.id')
              .whereNull('c.used_at')
              .where('c.expires_at', '>', asOf),
          )
          .whereNotExists((s) => s.select(knex.raw('1')).from('memberships as m').whereRaw('m.user_id = users.id')),
      );
      const sessions = await deleteInBatches(knex, 'sessions', (q) =>
        q
          .where('expires_at', '<', asOf)
          .orWhere('ended_at', '<', new Date(asOf.getTime() - ENDED_SESSION_RETENTION_DAYS * DAY_MS)),
      );
      const deviceCodes = await deleteInBatches(knex, 'cli_device_codes', (q) => q.where('expires_at', '<', asOf));
      const emailConfirmations = await deleteInBatches(knex, 'email_confirmations', (q) =>
        q.where('expires_at', '<', asOf).orWhereNotNull('used_at'),
      );
      const tokenReminders = await deleteInBatches(knex, 'token_reminders', (q) =>
        q.where('reminder_date', '<', new Date(asOf.getTime() - REMINDER_RETENTION_DAYS * DAY_MS)),
      );
      const cancelledEnvironments = await deleteCancelledEnvironments(deps, asOf);
      const expiredDomains = await expirePendingDomains(knex, { asOf });
      const domainVerifyCalls = await deleteInBatches(knex, 'domain_verify_calls', (q) =>
        q.where('at', '<', new Date(asOf.getTime() - 3_600_000)),
      );
      const deletedEnvironments = await pruneDeletedEnvironments(deps, asOf);
      const snapshotObjects = await deleteQueuedSnapshotObjects(deps, asOf);
      const idempotencyKeys = await pruneExpiredKeys(knex, asOf);
      const result = {
        asOf: asOf.toISOString(),
        cancelledEnvironments,
        expiredDomains,
        domainVerifyCalls,
        deletedEnvironments,
        snapshotObjects,
        idempotencyKeys,
        sessions,
        deviceCodes,
        emailConfirmations,
        unconfirmedUsers,
        tokenReminders,
      };
      deps.logger.info(result, 'expired records pruned');
      return result;
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
