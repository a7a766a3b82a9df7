// Token-expiry reminders, started every day by the schedule `token-expiry-reminders` (and by hand
// with `temporal schedule trigger`). Sends what is due now; each reminder at most once.

import { continueAsNew, log, proxyActivities } from '@temporalio/workflow';
import type { ReminderActivities } from '../activities/reminders';
import { fault, profiles } from './profiles';

const { findDueReminders } = proxyActivities<ReminderActivities>(profiles.daily);

// Retried with backoff for up to 12 hours (well past a mail outage of minutes, and over before the
// next day's run), same key each time; a permanent refusal by the mail server is not retried.
const { sendTokenReminder } = proxyActivities<ReminderActivities>(profiles.mail);

/** Tokens looked at per page by default; each page's run continues as new with a cursor, keeping histories short. */
const DEFAULT_PAGE_SIZE = 200;
/** Reminders in flight at once. */
const CONCURRENCY = 10;

interface SendTokenExpiryRemindersInput {
  /** The instant the run acts for (ISO 8601); the workflow's start time when omitted. */
  asOf?: string;
  /** Tokens looked at per run (1-1000; 200 when omitted); a full page continues as new with the rest. */
  pageSize?: number;
  /** Set by the workflow itself when it continues as new: the last token id looked at. */
  after?: string;
  /** Set by the workflow itself when it continues as new: the counts so far. */
  totals?: SendTokenExpiryRemindersResult;
}

export interface SendTokenExpiryRemindersResult {
  asOf: string;
  /** Tokens found due. */
  due: number;
  sent: number;
  /** Due when found, but sent by an overlapping run or no longer due when sending. */
  skipped: number;
  /** Not sent: the activity gave up (the workflow then fails, after trying every other one). */
  failed: number;
}

export async function sendTokenExpiryReminders(
  input: SendTokenExpiryRemindersInput = {},
): Promise<SendTokenExpiryRemindersResult> {
  const asOf = input.asOf ?? new Date(Date.now()).toISOString();
  if (Number.isNaN(new Date(asOf).getTime())) throw fault('InvalidInput', `asOf is not a date: "${asOf}"`);
  const totals: SendTokenExpiryRemindersResult = input.totals ?? { asOf, due: 0, sent: 0, skipped: 0, failed: 0 };

  const pageSize = input.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000)
    throw fault('InvalidInput', `pageSize must be an integer from 1 to 1000: ${pageSize}`);

  const due = await findDueReminders({ asOf, after: input.after, limit: pageSize });
  totals.due += due.length;
  for (let i = 0; i < due.length; i += CONCURRENCY) {
    const outcomes = await Promise.allSettled(
      due.slice(i, i + CONCURRENCY).map((r) => sendTokenReminder({ key: r.key, asOf })),
    );
    outcomes.forEach((outcome, j) => {
      if (outcome.status === 'rejected') {
        totals.failed += 1;
        log.warn('token reminder not sent', { key: due[i + j].key, error: String(outcome.reason) });
      } else if (outcome.value === 'sent') totals.sent += 1;
      else totals.skipped += 1;
    });
  }

  if (due.length === pageSize) {
    await continueAsNew<typeof sendTokenExpiryReminders>({
      asOf,
      pageSize,
      after: due[due.length - 1].token_id,
      totals,
    });
  }
  if (totals.failed > 0) {
    throw fault(
      'RemindersFailed',
      `${totals.failed} of ${totals.due} token reminders could not be sent; the next run tries them again`,
      totals,
    );
  }
  return totals;
}
