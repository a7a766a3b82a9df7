// Token-expiry reminders (CONTRACT "Personal access tokens", Reminders): which tokens are due, and
// sending one reminder exactly once. The workflow `sendTokenExpiryReminders` drives these.

import { emitIntegrationEvent } from '../../core/integration-events';
import { dueReminderToken, dueReminderTokens } from '../../db/queries/token-reminders';
import type { Deps } from '../../system/deps';
import { sendOrRefuse } from '../toolkit/mail';
import { tokenExpiryReminderEmail } from '../../system/mail/templates';
import { REMINDER_INTERVAL_DAYS, REMINDER_LEAD_DAYS, parseReminderKey, reminderKey, utcDay } from './keys';
import { userFault } from '../toolkit/failures';

interface DueReminder {
  /** `<token id>:<UTC day of asOf>`; see keys.ts. */
  key: string;
  token_id: string;
  expires_at: string;
}

interface FindDueRemindersInput {
  asOf: string;
  /** Keyset cursor: only tokens whose id sorts after this one. */
  after?: string;
  limit?: number;
}

interface SendTokenReminderInput {
  key: string;
  asOf: string;
}

type SendTokenReminderOutcome = 'sent' | 'already_sent' | 'not_due';

/** Advisory-lock class of this area (first half of the two-int lock key); the token id's hash is the second. */
const LOCK_CLASS = 4050;

function parseInstant(value: string, field: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw userFault('InvalidInput', `${field} is not a date: "${value}"`);
  return at;
}

/** The window a reminder run at `asOf` looks through (keys.ts). */
function dueWindow(asOf: Date) {
  return { asOf, day: utcDay(asOf), leadDays: REMINDER_LEAD_DAYS, intervalDays: REMINDER_INTERVAL_DAYS };
}

export function createReminderActivities(deps: Deps) {
  return {
    /** The tokens due a reminder at asOf, by id, at most `limit` (default 200) after the cursor. */
    async findDueReminders(input: FindDueRemindersInput): Promise<DueReminder[]> {
      const asOf = parseInstant(input.asOf, 'asOf');
      const limit = Math.min(Math.max(input.limit ?? 200, 1), 1000);
      const rows = await dueReminderTokens(deps.knex, dueWindow(asOf), { after: input.after, limit });
      return rows.map((row) => ({
        key: reminderKey(row.id, asOf),
        token_id: row.id,
        expires_at: row.expires_at.toISOString(),
      }));
    },

    /**
     * Sends the reminder `key` at most once:
     * 1. claims the key (a `token_reminders` row, sent_at null; a claim that exists is reused, which
     *    is how a retry after a failed send finds its own claim);
     * 2. in one transaction holding an advisory lock on the token (overlapping runs wait here, so two
     *    runs never send for one token at once), skips a claim already sent, re-checks the token is
     *    still due (revoked/expired/left the team/reminded meanwhile: the claim is dropped), sends
     *    the e-mail, sets sent_at and announces token.expiring to the team's integrations.
     * A failed announcement or send rolls back step 2 and throws: Temporal retries with the same key. A mail server's
     * permanent refusal (5xx) is not retried. The one gap no SMTP client can close: a send that
     * succeeds followed by a crash before the commit is sent again on retry (at least once).
     */
    async sendTokenReminder(input: SendTokenReminderInput): Promise<SendTokenReminderOutcome> {
      const parsed = parseReminderKey(input.key);
      if (!parsed) throw userFault('InvalidInput', `not a reminder key: "${input.key}"`);
      const asOf = parseInstant(input.asOf, 'asOf');
      if (utcDay(asOf) !== parsed.day) {
        throw userFault('InvalidInput', `reminder key ${input.key} does not belong to ${input.asOf}`);
      }
      const { tokenId, day } = parsed;

      // 1. The claim, committed on its own so it outlives a failed attempt.
      await deps.knex.raw(
        `INSERT INTO token_reminders (token_id, reminder_key, reminder_date)
         SELECT id, ?, ?::date FROM access_tokens WHERE id = ?
         ON CONFLICT (reminder_key) DO NOTHING`,
        [input.key, day, tokenId],
      );

      // 2. Check, send and mark under the token's lock.
      return deps.knex.transaction(async (trx) => {
        await trx.raw(`SET LOCAL lock_timeout = '60s'`);
        await trx.raw('SELECT pg_advisory_xact_lock(?::int, hashtext(?))', [LOCK_CLASS, tokenId]);
        const claim: { sent_at: Date | null } | undefined = await trx('token_reminders')
          .where('reminder_key', input.key)
          .forUpdate()
          .first('sent_at');
        if (!claim) return 'not_due'; // the token is gone (claims go with it)
        if (claim.sent_at) return 'already_sent';

        const token = await dueReminderToken(trx, dueWindow(asOf), tokenId, input.key);
        if (!token) {
          await trx('token_reminders').where('reminder_key', input.key).whereNull('sent_at').delete();
          deps.logger.info({ tokenId, key: input.key }, 'token reminder no longer due');
          return 'not_due';
        }

        // The later of the run's time and the clock: a retry hours later says how long is really left.
        const now = new Date(Math.max(asOf.getTime(), Date.now()));
        const email = tokenExpiryReminderEmail({
          userName: token.user_name,
          purpose: token.purpose,
          teamName: token.team_name,
          expiresAt: token.expires_at,
          now,
          baseUrl: deps.config.baseUrl,
        });
        await sendOrRefuse(deps.mailer, { to: token.email, ...email }, 'the token reminder');
        await trx('token_reminders').where('reminder_key', input.key).update({ sent_at: trx.fn.now() });
        deps.logger.info({ tokenId, key: input.key }, 'token reminder sent');
        // The team's integrations hear of it too (token.expiring; the reminder key makes it once only), announced in
        // this transaction: should Temporal not answer, sent_at is not set and the retry announces it (and sends the
        // e-mail again: at least once, as said above). After the e-mail, so that a mail outage's
        // retries start no delivery.
        await emitIntegrationEvent(
          { ...deps, knex: trx },
          {
            teamId: token.team_id,
            event: 'token.expiring',
            eventId: `evt_token_${input.key}`,
            data: {
              token: { id: token.id, purpose: token.purpose, expires_at: token.expires_at.toISOString() },
              team: { id: token.team_id, name: token.team_name },
            },
          },
        );
        return 'sent';
      });
    },
  };
}

export type ReminderActivities = ReturnType<typeof createReminderActivities>;
