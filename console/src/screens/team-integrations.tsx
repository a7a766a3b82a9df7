import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { type ChoiceField, ChoiceFields } from '../ui/choice-fields';
import { useAction, useLoad } from '../ui/hooks';
import { Check, CopyButton, ErrorNote, Field, FieldErrors, LoadState, Section, Select, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { eventLabel, type IntegrationEvent } from '../../../core/integration-kinds';

type Integration = Answer<'listIntegrations'>['data'][number];
type Kind = 'webhook' | 'slack';

/** The fields one kind asks for (POST /teams/{id}/integrations/fields), without those the form has itself. */
function useKindFields(teamId: string, kind: string) {
  const [fields, setFields] = useState<ChoiceField[]>([]);
  const layout = useAction(async () => {
    const r = await ok(
      api.POST('/teams/{id}/integrations/fields', { params: { path: { id: teamId } }, body: { kind: kind as Kind } }),
    );
    setFields(r.fields.filter((f) => !['events', 'kind', 'name'].includes(f.name)));
  });
  useEffect(() => void layout.run(), [teamId, kind]);
  return { fields, error: layout.error };
}

function Events(props: { all: string[]; chosen: string[]; onChange(v: string[]): void; error: unknown }) {
  return (
    <fieldset class="plain">
      <legend>Events</legend>
      {props.all.map((ev) => (
        <Check
          key={ev}
          label={eventLabel(ev)}
          name={`event-${ev}`}
          checked={props.chosen.includes(ev)}
          onChange={(on) => props.onChange(on ? [...props.chosen, ev] : props.chosen.filter((x) => x !== ev))}
        />
      ))}
      <FieldErrors error={props.error} prefix="events" />
    </fieldset>
  );
}

/** Integrations: the team's list, each opened to change or disconnect it; a new one laid out by its kind's fields. */
export function Integrations({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/teams/{id}/integrations', path)), [id]);
  const choices = useLoad(() => ok(api.GET('/teams/{id}/integrations/new', path)), [id]);
  const [kind, setKind] = useState<Kind>('webhook');
  const [name, setName] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [events, setEvents] = useState<string[]>([]);
  const [created, setCreated] = useState<{ name: string; secret?: string }>();
  const kindFields = useKindFields(id, kind);
  const create = useAction(async () => {
    const r = await ok(
      api.POST('/teams/{id}/integrations', { ...path, body: { kind, name, events, ...values } as never }),
    );
    setCreated({ name: r.name, secret: r.secret });
    setValues({});
    setName('');
    setEvents([]);
    await list.reload();
  });
  const all = choices.data?.events ?? [];
  return (
    <>
      <Section title="Integrations">
        <LoadState load={list} what="integrations" />
        {list.data?.data.length === 0 && (
          <p class="muted">No integrations yet: add one to hear of events in Slack or elsewhere.</p>
        )}
        {list.data?.data.map((i) => (
          <IntegrationCard key={i.id} teamId={id} integration={i} events={all} onChanged={list.reload} />
        ))}
      </Section>
      <Section title="Add an integration">
        {created && (
          <p class="notice" role="status">
            Added {created.name}.{' '}
            {created.secret && (
              <>
                Its signing secret, shown once: <code class="break">{created.secret}</code>{' '}
                <CopyButton text={created.secret} />
              </>
            )}
          </p>
        )}
        <LoadState load={choices} what="the kinds" />
        {choices.data && (
          <ActionForm onSubmit={() => create.run()}>
            <ErrorNote error={create.error ?? kindFields.error} />
            <Select
              label="Kind"
              name="kind"
              value={kind}
              onChange={(e) => setKind((e.target as HTMLSelectElement).value as Kind)}
              options={choices.data.kinds.map((k) => ({ value: k.kind, label: k.name }))}
              error={create.error}
            />
            <Field
              label="Name"
              name="name"
              required
              value={name}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
              error={create.error}
            />
            <ChoiceFields
              fields={kindFields.fields}
              values={values}
              onChange={setValues}
              error={create.error}
              prefix={kind}
            />
            <Events all={all} chosen={events} onChange={setEvents} error={create.error} />
            <button type="submit" disabled={create.busy}>
              Add integration
            </button>
          </ActionForm>
        )}
      </Section>
    </>
  );
}

/** One integration: "Change" opens its form (its kind's fields; a secret left empty is kept) and its deliveries. */
function IntegrationCard(props: {
  teamId: string;
  integration: Integration;
  events: string[];
  onChanged(): Promise<void>;
}) {
  const i = props.integration;
  const [open, setOpen] = useState(false);
  return (
    <div class="card inset">
      <p>
        <strong>{i.name}</strong> <span class="muted">{i.kind}</span> {i.url && <code class="break">{i.url}</code>}
      </p>
      <p class="muted">Hears of: {i.events.map(eventLabel).join(', ') || 'nothing'}</p>
      {!open && (
        <button type="button" class="secondary" onClick={() => setOpen(true)} aria-label={`Change ${i.name}`}>
          Change
        </button>
      )}
      {open && <IntegrationEdit {...props} onClose={() => setOpen(false)} />}
    </div>
  );
}

function IntegrationEdit(props: {
  teamId: string;
  integration: Integration;
  events: string[];
  onChanged(): Promise<void>;
  onClose(): void;
}) {
  const i = props.integration;
  const detail = useLoad(() => ok(api.GET('/integrations/{id}', { params: { path: { id: i.id } } })), [i.id]);
  const kindFields = useKindFields(props.teamId, i.kind);
  const [name, setName] = useState(i.name);
  const [events, setEvents] = useState<string[]>(i.events);
  const [values, setValues] = useState<Record<string, string>>({});
  const path = { params: { path: { id: i.id } } };
  const save = useAction(async () => {
    const given = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== ''));
    await ok(
      api.POST('/integrations/{id}', { ...path, body: { name, events: events as IntegrationEvent[], ...given } }),
    );
    props.onClose();
    await props.onChanged();
  });
  const remove = useAction(async () => {
    if (!confirm(`Disconnect ${i.name}? It hears of no more events.`)) return;
    await ok(api.DELETE('/integrations/{id}', path));
    await props.onChanged();
  });
  const fields = kindFields.fields.map((f) => ({
    ...f,
    required: false,
    description: `${f.description}. Leave empty to keep the one it has.`,
  }));
  return (
    <>
      <ActionForm onSubmit={() => save.run()}>
        <ErrorNote error={save.error ?? kindFields.error} />
        <Field
          label="Name"
          name="name"
          required
          value={name}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
          error={save.error}
        />
        <ChoiceFields fields={fields} values={values} onChange={setValues} error={save.error} prefix={i.id} />
        <Events all={props.events} chosen={events} onChange={setEvents} error={save.error} />
        <div class="buttons">
          <button type="submit" disabled={save.busy}>
            Save
          </button>
          <button type="button" class="secondary" onClick={props.onClose}>
            Close
          </button>
          <button type="button" class="danger" onClick={() => remove.run()} disabled={remove.busy}>
            Disconnect
          </button>
        </div>
        <ErrorNote error={remove.error} />
      </ActionForm>
      <h3>Last deliveries</h3>
      <LoadState load={detail} what="deliveries" />
      {detail.data?.deliveries?.length === 0 && <p class="muted">Nothing sent yet.</p>}
      <ul class="list">
        {detail.data?.deliveries?.map((d) => (
          <li key={d.id}>
            {eventLabel(d.event)} <span class={`status ${d.status}`}>{d.status}</span>{' '}
            <span class="muted">
              {d.attempts} attempt{d.attempts === 1 ? '' : 's'}
              {d.response_status !== null && `, answered ${d.response_status}`}, {when(d.created_at)}
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}
