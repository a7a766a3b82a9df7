import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { Check, LoadState, TextArea, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

/** One ticket opened: what was asked, its screenshots, the replies, and a reply (which may mark it resolved). */
export function TicketThread({ id, onChanged }: { id: string; onChanged(): Promise<void> }) {
  const path = { params: { path: { id } } };
  const ticket = useLoad(() => ok(api.GET('/tickets/{id}', path)), [id]);
  const [body, setBody] = useState('');
  const [resolved, setResolved] = useState(false);
  const reply = useAction(async () => {
    await ok(api.POST('/tickets/{id}/replies', { ...path, body: { body, ...(resolved ? { resolved } : {}) } }));
    setBody('');
    setResolved(false);
    await ticket.reload();
    await onChanged();
  });
  const t = ticket.data;
  return (
    <div class="card inset">
      <LoadState load={ticket} what="the ticket" />
      {t && (
        <>
          <p class="pre">{t.body}</p>
          {t.attachments.length > 0 && (
            <p class="muted">
              Screenshots: {t.attachments.map((a) => `${a.name} (${Math.ceil(a.bytes / 1024)} KB)`).join(', ')}
            </p>
          )}
          <ol class="list" aria-label="Replies">
            {(t.replies ?? []).map((r) => (
              <li key={r.id}>
                <strong>{r.by?.name ?? 'Support'}</strong> <span class="muted">{when(r.created_at)}</span>
                {r.resolved && <span class="status resolved"> resolved</span>}
                <p class="pre">{r.body}</p>
              </li>
            ))}
          </ol>
          {(t.replies ?? []).length === 0 && <p class="muted">No replies yet.</p>}
          <ActionForm action={reply}>
            <TextArea label="Your reply" name="body" value={body} onInput={setBody} rows={4} error={reply.error} />
            {t.status === 'open' && (
              <Check label="This solves it: mark resolved" name="resolved" checked={resolved} onChange={setResolved} />
            )}
            <button type="submit" disabled={reply.busy || !body.trim()}>
              Reply
            </button>
          </ActionForm>
        </>
      )}
    </div>
  );
}
