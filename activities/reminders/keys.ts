// Reminder keys and windows. Pure functions, safe to import from workflow code.

/** A token is reminded from this long before it expires. */
export const REMINDER_LEAD_DAYS = 14;
/** ...and then at most once per this many UTC calendar days. */
export const REMINDER_INTERVAL_DAYS = 7;

/** The UTC calendar day of an instant, `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * The key of the reminder a run at `asOf` sends for a token: `<token id>:<UTC day of asOf>`.
 *
 * - Re-runs and overlapping runs on the same day compute the same key, so they collide on the
 *   unique `token_reminders.reminder_key` and at most one of them sends.
 * - A token is due again only when no reminder was sent for it on any of the 6 UTC days before
 *   `asOf`'s day, nor on that day (`reminder_date > day(asOf) - 7`), so the next reminder is at least
 *   7 calendar days later and always gets a new key. Days rather than instants keep the daily
 *   schedule's weekly rhythm: a run a few seconds earlier than last week's still counts as a week.
 * - Runs on other days within the week find the token not due and compute no key at all.
 */
export function reminderKey(tokenId: string, asOf: Date): string {
  return `${tokenId}:${utcDay(asOf)}`;
}

const KEY = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(\d{4}-\d{2}-\d{2})$/i;

/** `<token id>:<YYYY-MM-DD>` -> its parts, or null when the key is not one. */
export function parseReminderKey(key: string): { tokenId: string; day: string } | null {
  const match = KEY.exec(key);
  if (!match) return null;
  return { tokenId: match[1].toLowerCase(), day: match[2] };
}
