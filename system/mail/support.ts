// Support tickets and their replies, e-mailed to SUPPORT_EMAIL (the ticket's screenshots attached).

import { p, PRODUCT_NAME, renderEmail, strong, type RenderedEmail } from './layout';

interface SupportTicketEmailInput {
  ticketId: string;
  teamName: string;
  teamId: string;
  from: { name: string; email: string };
  subject: string;
  category: string;
  body: string;
  environment?: { id: string; name: string } | null;
  attachments: Array<{ name: string; bytes: number }>;
}

export function supportTicketEmail(input: SupportTicketEmailInput): RenderedEmail {
  return renderEmail({
    subject: `[Ticket ${input.ticketId.slice(0, 8)}] ${input.subject}`,
    preheader: `${input.from.name} (${input.teamName}) opened a ${input.category} ticket.`,
    greeting: 'Hi support,',
    blocks: [
      p(
        strong(input.from.name),
        ` <${input.from.email}> of the team `,
        strong(input.teamName),
        ` (${input.teamId}) opened a ticket.`,
      ),
      { kind: 'code', label: 'Category', value: input.category },
      ...(input.environment
        ? [
            {
              kind: 'code' as const,
              label: 'Environment',
              value: `${input.environment.name} (${input.environment.id})`,
            },
          ]
        : []),
      ...input.body.split(/\n{2,}/).map((para) => p(para)),
      p(
        input.attachments.length
          ? `Attached: ${input.attachments.map((a) => `${a.name} (${a.bytes} bytes)`).join(', ')}.`
          : 'No attachments.',
      ),
    ],
    footer: `Ticket ${input.ticketId} on ${PRODUCT_NAME}. Reply through the console's API: POST /tickets/${input.ticketId}/replies.`,
  });
}

interface SupportReplyEmailInput {
  ticketId: string;
  subject: string;
  from: { name: string; email: string };
  body: string;
  resolved: boolean;
}

export function supportReplyEmail(input: SupportReplyEmailInput): RenderedEmail {
  return renderEmail({
    subject: `Re: [Ticket ${input.ticketId.slice(0, 8)}] ${input.subject}${input.resolved ? ' (resolved)' : ''}`,
    preheader: `${input.from.name} replied${input.resolved ? ' and marked the ticket resolved' : ''}.`,
    greeting: 'Hi support,',
    blocks: [
      p(
        strong(input.from.name),
        ` <${input.from.email}> replied${input.resolved ? ' and marked the ticket resolved' : ''}:`,
      ),
      ...input.body.split(/\n{2,}/).map((para) => p(para)),
    ],
    footer: `Ticket ${input.ticketId} on ${PRODUCT_NAME}.`,
  });
}
