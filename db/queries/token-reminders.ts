/**
 * Which access tokens are due an expiry reminder (CONTRACT "Personal access tokens", Reminders): read by the
 * reminder activities (activities/reminders), which hold the keys and windows (activities/reminders/keys.ts).
 */
import type { Knex } from 'knex';

interface DueWindow {
  asOf: Date;
  /** The UTC calendar day of asOf, `YYYY-MM-DD`. */
  day: string;
  /** A token is reminded from this many days before it expires... */
  leadDays: number;
  /** ...and then at most once per this many UTC calendar days. */
  intervalDays: number;
}

/**
 * A token is due at `asOf` when it is active (not revoked; not expired, neither at asOf nor now), its
 * issuer is still in its team, it expires within `leadDays` of asOf, and no reminder for it was sent on
 * asOf's UTC day or the `intervalDays` - 1 days before (`excludeKey`: the reminder being sent, which does
 * not count against itself).
 */
function dueTokens(knex: Knex, due: DueWindow, excludeKey: string | null) {
  return knex('access_tokens as t')
    .whereNull('t.revoked_at')
    .where('t.expires_at', '>', knex.raw('greatest(?::timestamptz, now())', [due.asOf.toISOString()]))
    .where(
      't.expires_at',
      '<=',
      knex.raw(`?::timestamptz + make_interval(days => ?)`, [due.asOf.toISOString(), due.leadDays]),
    )
    .whereExists((q) =>
      q
        .select(knex.raw('1'))
        .from('memberships as m')
        .whereRaw('m.team_id = t.team_id')
        .whereRaw('m.user_id = t.user_id'),
    )
    .whereNotExists((q) => {
      q.select(knex.raw('1'))
        .from('token_reminders as r')
        .whereRaw('r.token_id = t.id')
        .whereNotNull('r.sent_at')
        .whereRaw('r.reminder_date > ?::date - ?::int', [due.day, due.intervalDays]);
      if (excludeKey) q.whereNot('r.reminder_key', excludeKey);
    });
}

/** The tokens due a reminder, by id, at most `limit` after the cursor `after`. */
export async function dueReminderTokens(
  knex: Knex,
  due: DueWindow,
  page: { after?: string; limit: number },
): Promise<Array<{ id: string; expires_at: Date }>> {
  const query = dueTokens(knex, due, null).select('t.id', 't.expires_at').orderBy('t.id').limit(page.limit);
  if (page.after) query.where('t.id', '>', page.after);
  return query;
}

/** The token of the reminder `key` with its issuer and team, if it is still due (undefined: no longer). */
export async function dueReminderToken(
  knex: Knex,
  due: DueWindow,
  tokenId: string,
  key: string,
): Promise<
  | {
      id: string;
      purpose: string;
      expires_at: Date;
      email: string;
      user_name: string;
      team_name: string;
      team_id: string;
    }
  | undefined
> {
  return dueTokens(knex, due, key)
    .where('t.id', tokenId)
    .join('users as u', 'u.id', 't.user_id')
    .join('teams as tm', 'tm.id', 't.team_id')
    .first('t.id', 't.purpose', 't.expires_at', 'u.email', 'u.name as user_name', 'tm.name as team_name', 't.team_id');
}
