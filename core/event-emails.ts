/**
 * The e-mail half of a project's notification rules (CONTRACT `GET/POST /projects/{id}/notifications`: `email:
 * "members" | "admins" | "none"` per event): who gets an e-mail of an event. The integrations half is
 * core/integration-events.ts. A mail the server does not take at once is handed to Temporal, which sends it again
 * until the server takes it (workflows/emails.ts: up to 12 hours); it never fails the caller: the event happened,
 * and its integrations and the team's activity say so whatever the mail server does. Logs never carry its text.
 */
import type { Knex } from 'knex';
import type { Logger } from '../system/logger';
import { isPermanentMailError, type Mailer } from '../system/mail/transport';
import type { RenderedEmail } from '../system/mail/layout';
import { projectEventEmail } from '../system/mail';
import { memberEmails } from '../db/queries/memberships';
import { startEventEmailRetry, type TemporalDeps } from './temporal-starts';

type MailDeps = { knex: Knex; mailer: Mailer; logger: Logger } & TemporalDeps;

const ROLES = {
  admins: ['owner', 'admin'],
  members: ['owner', 'admin', 'developer', 'viewer'],
} as const;

/**
 * Mails the team's people that `email` names; how many were sent at once. A mail the server does not take now is
 * handed to Temporal to be sent again. Never throws: what cannot be handed over either is logged.
 */
export async function mailPeople(
  deps: MailDeps,
  e: { teamId: string; email: 'members' | 'admins' | 'none'; mail: RenderedEmail; event: string },
): Promise<number> {
  if (e.email === 'none') return 0;
  let sent = 0;
  try {
    const people = await memberEmails(deps.knex, e.teamId, ROLES[e.email]);
    for (const person of people) {
      await deps.mailer.send({ to: person.email, ...e.mail }).then(
        () => sent++,
        (err: Error) => sendLater(deps, { event: e.event, teamId: e.teamId, to: person.email, mail: e.mail }, err),
      );
    }
  } catch (err) {
    deps.logger.warn({ err: (err as Error).message, event: e.event, teamId: e.teamId }, 'event e-mails not sent');
  }
  return sent;
}

/** A project's event other than a task's end, mailed as projectEventEmail words it. */
export function mailProjectEvent(
  deps: MailDeps,
  to: { teamId: string; email: 'members' | 'admins' | 'none'; event: string },
  content: Parameters<typeof projectEventEmail>[0],
): Promise<number> {
  if (to.email === 'none') return Promise.resolve(0);
  return mailPeople(deps, { ...to, mail: projectEventEmail(content) });
}

/** The mail to Temporal, which sends it again until the server takes it; logged either way, never its text. */
async function sendLater(
  deps: MailDeps,
  input: { event: string; teamId: string; to: string; mail: RenderedEmail },
  refused: Error,
): Promise<void> {
  const about = { err: refused.message, event: input.event, teamId: input.teamId };
  if (isPermanentMailError(refused))
    return void deps.logger.warn(about, 'event e-mail refused for good by the mail server');
  try {
    await startEventEmailRetry(deps, input);
    deps.logger.warn(about, 'event e-mail not taken by the mail server: sent again until it is');
  } catch (err) {
    deps.logger.warn({ ...about, retry: (err as Error).message }, 'event e-mail not sent');
  }
}
