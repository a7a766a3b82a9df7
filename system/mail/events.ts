// E-mail about a project's events, sent to the people its notification rules name.

import { p, PRODUCT_NAME, renderEmail, strong, type RenderedEmail } from './layout';

interface TaskEventEmailInput {
  outcome: 'succeeded' | 'failed';
  taskType: string;
  taskUrl: string;
  project: string | null;
  environment: string | null;
  reason?: string | null;
}

export function taskEventEmail(input: TaskEventEmailInput): RenderedEmail {
  const what = `${input.taskType[0].toUpperCase()}${input.taskType.slice(1).replace(/_/g, ' ')}`;
  const where = [input.project, input.environment].filter(Boolean).join(' / ');
  return renderEmail({
    subject: `${what}${where ? ` of ${where}` : ''} ${input.outcome}`,
    preheader: input.outcome === 'failed' && input.reason ? input.reason : `${what} ${input.outcome}.`,
    greeting: 'Hi,',
    blocks: [
      p(`${what}`, ...(where ? [' of ', strong(where)] : []), ` ${input.outcome}.`),
      ...(input.outcome === 'failed' && input.reason ? [p(`Reason: ${input.reason}`)] : []),
      { kind: 'button', label: 'See the task', url: input.taskUrl },
    ],
    footer: `You're receiving this because the project's notification rules on ${PRODUCT_NAME} send these events to you.`,
  });
}

interface ProjectEventEmailInput {
  /** What happened, as the subject says it: "The app of shop / production keeps exiting". */
  subject: string;
  /** The same, with the project and environment in bold where the text names them. */
  what: string;
  /** What follows from it, and what to do, in a sentence or two. */
  detail: string;
  button: { label: string; url: string };
}

/** A project's event other than a task's end (app.crashing, domain.verified, backup.failed, backup.verify_failed). */
export function projectEventEmail(input: ProjectEventEmailInput): RenderedEmail {
  return renderEmail({
    subject: input.subject,
    preheader: input.detail,
    greeting: 'Hi,',
    blocks: [p(`${input.what}.`), p(input.detail), { kind: 'button', ...input.button }],
    footer: `You're receiving this because the project's notification rules on ${PRODUCT_NAME} send these events to you.`,
  });
}

interface EvacuationEmailInput {
  project: string;
  environment: string;
  /** When the snapshot it was restored from was taken (ISO). */
  snapshotAt: string;
  taskUrl: string;
}

/** An environment restored from its newest snapshot onto another machine: the writes since that snapshot are lost. */
export function evacuationEmail(input: EvacuationEmailInput): RenderedEmail {
  const where = `${input.project} / ${input.environment}`;
  return renderEmail({
    subject: `${where} was restored from its snapshot of ${input.snapshotAt}`,
    preheader: `The machine it ran on is down: what it wrote after ${input.snapshotAt} is lost.`,
    greeting: 'Hi,',
    blocks: [
      p(
        strong(where),
        ' ran on a machine that is down. It now runs on another machine, restored from its snapshot of ',
        strong(input.snapshotAt),
        '.',
      ),
      p(`What it wrote after ${input.snapshotAt} (its database and its files) was on that machine only, and is lost.`),
      { kind: 'button', label: 'See the task', url: input.taskUrl },
    ],
    footer: `You're receiving this because you are an owner or an admin of the team on ${PRODUCT_NAME}.`,
  });
}
