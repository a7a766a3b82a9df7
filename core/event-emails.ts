/**
 * The e-mail half of a project's notification rules (CONTRACT `GET/POST /projects/{id}/notifications`: `email:
 * "members" | "admins" | "none"` per event): who gets an e-mail of an event. The integrations half is
 * core/integration-events.ts. A mail that cannot be sent is logged (never its text) and does not fail the caller:
 * the event happened, and its integrations and the team's activity say so whatever the mail server does.
 */
import type { Knex } from 'knex';
import type { Logger } from '../system/logger';
import type { Mailer } from '../system/mail/transport';
import type { RenderedEmail } from '../system/mail/layout';
import { projectEventEmail } from '../system/mail';
import { memberEmails } from '../db/queries/memberships';

type MailDeps = { knex: Knex; mailer: Mailer; logger: Logger };

const ROLES = {
  admins: ['owner', 'admin'],
  members: ['owner', 'admin', 'developer', 'viewer'],
} as const;

/** Mails the team's people that `email` names; how many were sent. Never throws: a failure is logged. */
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
        (err: Error) =>
          deps.logger.warn({ err: err.message, event: e.event, teamId: e.teamId }, 'event e-mail not sent'),
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
