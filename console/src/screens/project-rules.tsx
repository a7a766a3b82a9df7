import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { Check, ErrorNote, FieldErrors, LoadState, Section, Select, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { eventLabel, type IntegrationEvent } from '../../../core/integration-kinds';

type Email = 'members' | 'admins' | 'none';
interface Rule {
  event: string;
  email: Email;
  integration_ids: string[];
}

/** An access token's reminder: the team's, whatever a project's rule says (activities/reminders). */
const TEAM_EVENT = 'token.expiring';

const EMAIL: { value: Email; label: string }[] = [
  { value: 'members', label: 'every member' },
  { value: 'admins', label: 'the admins and owners' },
  { value: 'none', label: 'nobody' },
];

/** Who hears of the project's events: whom it e-mails, and which of the team's integrations; one save. */
export function NotificationRules({ id, teamId }: { id: string; teamId?: string }) {
  const path = { params: { path: { id } } };
  const rules = useLoad(() => ok(api.GET('/projects/{id}/notifications', path)), [id]);
  const integrations = useLoad(
    () =>
      teamId
        ? ok(api.GET('/teams/{id}/integrations', { params: { path: { id: teamId } } }))
        : Promise.resolve(undefined),
    [teamId],
  );
  const [draft, setDraft] = useState<Rule[]>([]);
  const [saved, setSaved] = useState(false);
  useEffect(() => setDraft(rules.data?.rules ?? []), [rules.data]);
  const save = useAction(async () => {
    setSaved(false);
    const body = { rules: draft.map((r) => ({ ...r, event: r.event as IntegrationEvent })) };
    setDraft((await ok(api.POST('/projects/{id}/notifications', { ...path, body }))).rules);
    setSaved(true);
  });
  const change = (i: number, rule: Partial<Rule>) => {
    setSaved(false);
    setDraft(draft.map((r, j) => (j === i ? { ...r, ...rule } : r)));
  };
  const hooks = integrations.data?.data ?? [];
  return (
    <Section title="Notification rules">
      <LoadState load={rules} what="the rules" />
      {draft.length > 0 && (
        <ActionForm action={save}>
          {draft.map((r, i) => (
            <fieldset key={r.event} class="plain rule">
              <legend>{eventLabel(r.event)}</legend>
              {r.event === TEAM_EVENT ? (
                // not a project's event: no rule of a project changes who hears of it
                <p class="muted">
                  A team's event, not a project's: whoever issued the token gets its reminder e-mail, and every
                  integration of the team that listens for it hears of it.
                </p>
              ) : (
                <>
                  <Select
                    label={`Whom to e-mail (${eventLabel(r.event).toLowerCase()})`}
                    name={`rules.${i}.email`}
                    value={r.email}
                    onChange={(e) => change(i, { email: (e.target as HTMLSelectElement).value as Email })}
                    options={EMAIL}
                    error={save.error}
                  />
                  {hooks.map((h) => (
                    <Check
                      key={h.id}
                      label={`${h.name} (${h.kind})`}
                      name={`rules.${i}.integration_ids`}
                      checked={r.integration_ids.includes(h.id)}
                      onChange={(on) =>
                        change(i, {
                          integration_ids: on
                            ? [...r.integration_ids, h.id]
                            : r.integration_ids.filter((x) => x !== h.id),
                        })
                      }
                    />
                  ))}
                  <FieldErrors error={save.error} prefix={`rules.${i}`} />
                </>
              )}
            </fieldset>
          ))}
          {teamId && hooks.length === 0 && integrations.data && (
            <p class="muted">
              No integration yet: <a href={`/teams/${teamId}/integrations`}>add one</a> to hear of events elsewhere.
            </p>
          )}
          <button type="submit" disabled={save.busy}>
            Save rules
          </button>
          {saved && <p role="status">Rules saved.</p>}
        </ActionForm>
      )}
    </Section>
  );
}

/** The terms in force for the project, who accepted which version and when; "Accept" the one in force. */
export function ProjectTerms({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const terms = useLoad(() => ok(api.GET('/projects/{id}/terms', path)), [id]);
  const accept = useAction(async () => {
    await ok(api.POST('/projects/{id}/terms', { ...path, body: { version: terms.data!.version } }));
    await terms.reload();
  });
  const t = terms.data;
  const current = t?.accepted?.version === t?.version;
  return (
    <Section title="Terms">
      <LoadState load={terms} what="the terms" />
      {t && (
        <>
          <p>
            Terms in force: version <strong>{t.version}</strong>.{' '}
            {t.accepted ? (
              <span data-accepted>
                Version {t.accepted.version} accepted by {t.accepted.by?.name ?? 'someone no longer here'} on{' '}
                {when(t.accepted.at)}.
              </span>
            ) : (
              <span class="muted">Not accepted yet.</span>
            )}
          </p>
          {!current && (
            <button type="button" onClick={() => accept.run()} disabled={accept.busy}>
              Accept the terms
            </button>
          )}
          <ErrorNote error={accept.error} />
        </>
      )}
    </Section>
  );
}
