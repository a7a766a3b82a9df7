import type { Ticket } from '../../db/models/ticket';
import type { AttachmentRow, ReplyRow } from './service';

/** A ticket with its attachments' names (never their bytes), and its replies when asked for one ticket. */
export function presentTicket({
  ticket: t,
  attachments,
  replies,
}: {
  ticket: Ticket;
  attachments: AttachmentRow[];
  replies?: ReplyRow[];
}) {
  return {
    id: t.id,
    team_id: t.team_id,
    environment_id: t.environment_id,
    subject: t.subject,
    body: t.body,
    category: t.category,
    status: t.status,
    attachments: attachments
      .filter((a) => a.ticket_id === t.id)
      .map((a) => ({ name: a.name, bytes: a.bytes, type: a.type })),
    created_at: t.created_at.toISOString(),
    resolved_at: t.resolved_at?.toISOString() ?? null,
    ...(replies ? { replies: replies.map(presentReply) } : {}),
  };
}

/** A reply, with who wrote it (null: the support team). */
export function presentReply(r: ReplyRow) {
  return {
    id: r.id,
    ticket_id: r.ticket_id,
    body: r.body,
    by: r.user_id ? { id: r.user_id, name: r.user_name ?? '' } : null,
    resolved: r.resolved,
    created_at: r.created_at.toISOString(),
  };
}
