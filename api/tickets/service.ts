import type { Knex } from 'knex';
import type { Deps } from '../../system/deps';
import { supportReplyEmail, supportTicketEmail } from '../../system/mail';
import { Ticket } from '../../db/models/ticket';
import { TicketReply } from '../../db/models/ticket-reply';
import { teamEnvironment } from '../../db/queries/environments';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import type { CheckedAttachment } from './attachments';
import { ATTACHMENT_LIMITS, ATTACHMENT_TYPES, TICKET_CATEGORIES, type CreateBody } from './schemas';

export function newTicketChoices() {
  return {
    categories: [...TICKET_CATEGORIES],
    attachments: {
      max_files: ATTACHMENT_LIMITS.maxFiles,
      max_bytes: ATTACHMENT_LIMITS.maxFileBytes,
      types: [...ATTACHMENT_TYPES],
    },
  };
}

const attachmentRows = (knex: Knex, ticketIds: string[]) =>
  knex('ticket_attachments')
    .whereIn('ticket_id', ticketIds)
    .orderBy('position')
    .select('ticket_id', 'name', 'type', 'bytes') as Promise<AttachmentRow[]>;

async function send(deps: Deps, message: Parameters<Deps['mailer']['send']>[0]) {
  try {
    await deps.mailer.send(message);
  } catch {
    throw appError(
      'mail_not_sent',
      'The ticket could not be e-mailed to support, so nothing was kept; try again shortly',
    );
  }
}

/**
 * Opens a ticket and e-mails it, attachments included, to SUPPORT_EMAIL. The e-mail goes out inside the
 * transaction: when it cannot be sent the answer is 503 mail_not_sent and nothing is kept.
 */
export interface AttachmentRow {
  ticket_id: string;
  name: string;
  type: string;
  bytes: number;
}

export type ReplyRow = Pick<TicketReply, 'id' | 'ticket_id' | 'user_id' | 'body' | 'resolved' | 'created_at'> & {
  user_name?: string | null;
};

export async function createTicket(
  deps: Deps,
  actor: Actor,
  teamId: string,
  body: CreateBody,
  files: CheckedAttachment[],
) {
  let environment: { id: string; name: string } | null = null;
  if (body.environment_id) {
    environment = (await teamEnvironment(deps.knex, body.environment_id, teamId)) ?? null;
    if (!environment) throw errors.invalid({ environment_id: 'is not an environment of this team' });
  }
  const team = await deps.knex('teams').where({ id: teamId }).first('name');
  const ticket = await deps.knex.transaction(async (trx) => {
    const row = await Ticket.query(trx).insertAndFetch({
      team_id: teamId,
      environment_id: environment?.id ?? null,
      opened_by: actor.user.id,
      subject: body.subject,
      body: body.body,
      category: body.category,
      status: 'open',
    } as Partial<Ticket>);
    for (const [position, f] of files.entries()) {
      await trx('ticket_attachments').insert({
        ticket_id: row.id,
        position,
        name: f.name,
        type: f.type,
        bytes: f.bytes,
        content: f.content,
      });
    }
    const mail = supportTicketEmail({
      ticketId: row.id,
      teamName: team.name,
      teamId,
      from: { name: actor.user.name, email: actor.user.email },
      subject: body.subject,
      category: body.category,
      body: body.body,
      environment,
      attachments: files,
    });
    await send(deps, {
      to: deps.config.supportEmail,
      replyTo: actor.user.email,
      ...mail,
      attachments: files.map((f) => ({ filename: f.name, content: f.content, contentType: f.type })),
    });
    return row;
  });
  return { ticket, attachments: files.map((f) => ({ ticket_id: ticket.id, ...f })) };
}

export async function listTickets(deps: Deps, teamId: string) {
  const tickets = await Ticket.query(deps.knex)
    .where({ team_id: teamId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
  const attachments = tickets.length
    ? await attachmentRows(
        deps.knex,
        tickets.map((t) => t.id),
      )
    : [];
  return tickets.map((ticket) => ({ ticket, attachments }));
}

export async function getTicket(deps: Deps, id: string) {
  const ticket = await Ticket.query(deps.knex).findById(id);
  if (!ticket) throw errors.notFound('ticket');
  const [attachments, replies] = await Promise.all([
    attachmentRows(deps.knex, [id]),
    TicketReply.query(deps.knex)
      .leftJoin('users', 'users.id', 'ticket_replies.user_id')
      .where({ ticket_id: id })
      .select('ticket_replies.*', 'users.name as user_name')
      .orderBy([{ column: 'ticket_replies.created_at' }, { column: 'ticket_replies.id' }]),
  ]);
  return { ticket, attachments, replies: replies as unknown as ReplyRow[] };
}

/** A reply, e-mailed to support; `resolved: true` resolves the ticket (a later reply opens it again). */
export async function replyToTicket(
  deps: Deps,
  actor: Actor,
  ticketId: string,
  body: { body: string; resolved: boolean },
) {
  const reply = await deps.knex.transaction(async (trx) => {
    const ticket = await Ticket.query(trx).findById(ticketId).forUpdate();
    if (!ticket) throw errors.notFound('ticket');
    const row = await TicketReply.query(trx).insertAndFetch({
      ticket_id: ticketId,
      user_id: actor.user.id,
      body: body.body,
      resolved: body.resolved,
    });
    await Ticket.query(trx)
      .findById(ticketId)
      .patch(body.resolved ? { status: 'resolved', resolved_at: new Date() } : { status: 'open', resolved_at: null });
    await send(deps, {
      to: deps.config.supportEmail,
      replyTo: actor.user.email,
      ...supportReplyEmail({
        ticketId,
        subject: ticket.subject,
        from: { name: actor.user.name, email: actor.user.email },
        body: body.body,
        resolved: body.resolved,
      }),
    });
    return row;
  });
  return { ...reply, user_name: actor.user.name } as ReplyRow;
}
