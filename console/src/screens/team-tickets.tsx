import { useState } from 'preact/hooks';
import { API_BASE, ApiError, api, csrfToken, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, LoadState, Section, Select, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { TicketThread } from './team-ticket-thread';

/** Support tickets: the list, and a new ticket with screenshots (multipart, attachments[]). */
export function Tickets({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/teams/{id}/tickets', path)), [id]);
  const choices = useLoad(() => ok(api.GET('/teams/{id}/tickets/new', path)), [id]);
  const [subject, setSubject] = useState('');
  const [body, setBody] = useState('');
  const [category, setCategory] = useState('');
  const [files, setFiles] = useState<File[]>([]);
  const open = useAction(async () => {
    const form = new FormData();
    form.set('subject', subject);
    form.set('body', body);
    form.set('category', category || choices.data?.categories[0] || 'other');
    for (const f of files) form.append('attachments[]', f, f.name);
    // Multipart through fetch: openapi-fetch serialises JSON bodies.
    const res = await fetch(`${API_BASE}/teams/${id}/tickets`, {
      method: 'POST',
      body: form,
      credentials: 'same-origin',
      headers: { 'X-CSRF-Token': await csrfToken() },
    });
    if (!res.ok)
      throw new ApiError(res.status, await res.json().catch(() => undefined), res.headers.get('retry-after'));
    setSubject('');
    setBody('');
    setFiles([]);
    await list.reload();
  });
  const limits = choices.data?.attachments;
  const [opened, setOpened] = useState<string>();
  return (
    <>
      <Section title="New ticket">
        <ErrorNote error={choices.error} />
        {choices.data && (
          <ActionForm action={open}>
            <Field
              label="Subject"
              name="subject"
              required
              value={subject}
              onInput={(e) => setSubject((e.target as HTMLInputElement).value)}
              error={open.error}
            />
            <div class="field">
              <label for="ticket-body">What happened</label>
              <textarea
                id="ticket-body"
                name="body"
                rows={5}
                required
                value={body}
                onInput={(e) => setBody((e.target as HTMLTextAreaElement).value)}
              />
              {open.error instanceof ApiError && open.error.fields.body && (
                <small class="field-error">{open.error.fields.body}</small>
              )}
            </div>
            <Select
              label="Category"
              name="category"
              value={category || choices.data.categories[0]}
              onChange={(e) => setCategory((e.target as HTMLSelectElement).value)}
              options={choices.data.categories.map((c) => ({ value: c, label: c }))}
              error={open.error}
            />
            <div class="field">
              <label for="ticket-files">Screenshots</label>
              <input
                id="ticket-files"
                type="file"
                multiple
                accept={limits?.types.join(',')}
                onChange={(e) => setFiles([...((e.target as HTMLInputElement).files ?? [])])}
              />
              {limits && (
                <small class="muted">
                  Up to {limits.max_files} images of {Math.round(limits.max_bytes / 1024 / 1024)} MB
                </small>
              )}
              {open.error instanceof ApiError &&
                Object.entries(open.error.fields)
                  .filter(([k]) => k.startsWith('attachments'))
                  .map(([k, v]) => (
                    <small key={k} class="field-error">
                      {k}: {v}
                    </small>
                  ))}
            </div>
            <button type="submit" disabled={open.busy}>
              Open ticket
            </button>
          </ActionForm>
        )}
      </Section>
      <Section title="Tickets">
        <LoadState load={list} what="tickets" />
        {list.data?.data.length === 0 && <p class="muted">No tickets yet.</p>}
        <ul class="list">
          {list.data?.data.map((t) => (
            <li key={t.id}>
              <strong>{t.subject}</strong> <span class={`status ${t.status}`}>{t.status}</span>{' '}
              <span class="muted">
                {t.category}, {when(t.created_at)}
                {t.attachments.length > 0 && `, ${t.attachments.map((a) => a.name).join(', ')}`}
              </span>{' '}
              <button
                type="button"
                class="secondary"
                aria-expanded={opened === t.id}
                onClick={() => setOpened(opened === t.id ? undefined : t.id)}
              >
                {opened === t.id ? 'Close' : 'Open'}
              </button>
              {opened === t.id && <TicketThread id={t.id} onChanged={list.reload} />}
            </li>
          ))}
        </ul>
      </Section>
    </>
  );
}
