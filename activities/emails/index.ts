/**
 * An event's e-mail that the mail server did not take when it was first sent (core/event-emails.ts hands it to
 * the `deliverEventEmail` workflow): sent again with backoff (profiles.mail) until the server takes it. A
 * permanent refusal (5xx: an address the server will never take) ends it at once. Errors never carry the mail's
 * text, only the server's answer.
 */
import type { Deps } from '../../system/deps';
import type { RenderedEmail } from '../../system/mail/layout';
import { sendOrRefuse } from '../toolkit/mail';

export interface EventEmailInput {
  /** The event it tells of (`app.crashing`, `domain.verified`, `task.failed`, ...): for logs. */
  event: string;
  teamId: string;
  to: string;
  mail: RenderedEmail;
}

export function createEmailActivities(deps: Pick<Deps, 'mailer' | 'logger'>) {
  return {
    async sendEventEmail(input: EventEmailInput): Promise<void> {
      await sendOrRefuse(deps.mailer, { to: input.to, ...input.mail }, `the ${input.event} e-mail`);
      deps.logger.info({ event: input.event, teamId: input.teamId }, 'event e-mail sent on a later attempt');
    },
  };
}

export type EmailActivities = ReturnType<typeof createEmailActivities>;
