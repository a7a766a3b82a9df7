import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { formatMonthly } from '../lib/price';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, Loading, LoadState, Section, Select, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

/** The team's name; `onSaved` lets the page's heading follow a rename. */
export function TeamSettings({ id, onSaved }: { id: string; onSaved(): void }) {
  const path = { params: { path: { id } } };
  const settings = useLoad(() => ok(api.GET('/teams/{id}/settings', path)), [id]);
  const [name, setName] = useState<string>();
  const save = useAction(async () => {
    await ok(api.POST('/teams/{id}/settings', { ...path, body: { name: name ?? settings.data?.name } }));
    await settings.reload();
    onSaved();
  });
  return (
    <Section title="Settings">
      <LoadState load={settings} what="settings" />
      {settings.data && (
        <ActionForm action={save}>
          <Field
            label="Team name"
            name="name"
            required
            value={name ?? settings.data.name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
            error={save.error}
          />
          <button type="submit" disabled={save.busy}>
            Save
          </button>
          {save.busy === false && name !== undefined && !save.error && settings.data.name === name && (
            <p role="status">Saved.</p>
          )}
        </ActionForm>
      )}
    </Section>
  );
}

type Format = Answer<'getAddressFormat'>;

/** Billing details, the address form laid out by POST /billing/address-format, and the subscriptions. */
export function TeamBilling({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const billing = useLoad(() => ok(api.GET('/teams/{id}/billing', path)), [id]);
  const [values, setValues] = useState<Record<string, string>>({});
  const [format, setFormat] = useState<Format>();
  const [saved, setSaved] = useState(false);
  const country = (values.country ?? billing.data?.details?.country ?? '').toUpperCase();
  // Only the last country's layout is shown: the answers of two quick changes may come back in either order.
  const asked = useRef('');
  const layout = useAction(async (code: string) => {
    const answer = await ok(api.POST('/billing/address-format', { body: { country: code } }));
    if (asked.current === code) setFormat(answer);
  });
  useEffect(() => {
    asked.current = country;
    if (/^[A-Z]{2}$/.test(country)) void layout.run(country);
  }, [country]);
  const save = useAction(async () => {
    setSaved(false);
    const d = billing.data?.details;
    const body = {
      name: values.name ?? d?.name ?? '',
      email: values.email ?? d?.email ?? '',
      ...values,
      country,
    };
    await ok(api.POST('/teams/{id}/billing', { ...path, body }));
    setSaved(true);
    await billing.reload();
  });
  const set = (k: string) => (e: Event) => setValues({ ...values, [k]: (e.target as HTMLInputElement).value });
  const b = billing.data;
  return (
    <>
      <Section title="Billing details">
        {billing.loading && !b ? <Loading what="billing" /> : <ErrorNote error={billing.error} />}
        {b && (
          <ActionForm action={save}>
            <Field
              label="Name"
              name="name"
              required
              value={values.name ?? b.details?.name ?? ''}
              onInput={set('name')}
              error={save.error}
            />
            <Field
              label="Billing e-mail address"
              name="email"
              type="email"
              required
              value={values.email ?? b.details?.email ?? ''}
              onInput={set('email')}
              error={save.error}
            />
            <Field
              label="Country (two-letter code)"
              name="country"
              required
              maxLength={2}
              value={country}
              onInput={set('country')}
              error={save.error}
            />
            <ErrorNote error={layout.error} />
            {format && format.country === country && (
              <fieldset class="plain">
                <legend>Address in {countryWords(format.country, format.country_name)}</legend>
                {format.fields
                  .filter((f) => !['name', 'country'].includes(f.name))
                  .map((f) =>
                    f.choices && f.choices.length > 0 ? (
                      <Select
                        key={f.name}
                        label={f.label}
                        name={f.name}
                        value={values[f.name] ?? ''}
                        onChange={set(f.name)}
                        options={[{ value: '', label: '—' }, ...f.choices.map((c) => ({ value: c, label: c }))]}
                        error={save.error}
                      />
                    ) : (
                      <Field
                        key={f.name}
                        label={f.label}
                        name={f.name}
                        required={f.required}
                        value={values[f.name] ?? ''}
                        onInput={set(f.name)}
                        error={save.error}
                      />
                    ),
                  )}
              </fieldset>
            )}
            <Field
              label="VAT number"
              name="vat_id"
              value={values.vat_id ?? b.details?.vat_id ?? ''}
              onInput={set('vat_id')}
              error={save.error}
            />
            <button type="submit" disabled={save.busy}>
              Save billing details
            </button>
            {saved && <p role="status">Saved.</p>}
          </ActionForm>
        )}
      </Section>
      {b && <Subscriptions teamId={id} billing={b} onChange={() => billing.reload()} />}
    </>
  );
}

/** The API's sentence of what ends and when, without its instruction to API clients (`Send {"confirm": true} to cancel.`). */
const forPeople = (ends: string) => ends.replace(/\s*Send \{"confirm": true\} to cancel\.\s*$/, '');

function Subscriptions(props: { teamId: string; billing: Answer<'getTeamBilling'>; onChange(): void }) {
  const [asking, setAsking] = useState<Answer<'getSubscriptionCancel'>>();
  const ask = useAction(async (order: string) => {
    setAsking(
      await ok(api.GET('/teams/{id}/subscriptions/{order}/cancel', { params: { path: { id: props.teamId, order } } })),
    );
  });
  const cancel = useAction(async () => {
    if (!asking) return;
    await ok(
      api.POST('/teams/{id}/subscriptions/{order}/cancel', {
        params: { path: { id: props.teamId, order: asking.order } },
        body: { confirm: true },
      }),
    );
    setAsking(undefined);
    props.onChange();
  });
  const { currency, subscriptions, monthly_total } = props.billing;
  return (
    <Section title="Subscriptions">
      <p>Monthly total: {formatMonthly(monthly_total, currency)}</p>
      {subscriptions.length === 0 && <p class="muted">No subscriptions.</p>}
      <ul class="list">
        {subscriptions.map((s) => (
          <li key={s.order}>
            <strong>{s.item}</strong> <span class={`status ${s.status}`}>{s.status}</span>{' '}
            <span class="muted">
              {formatMonthly(s.monthly_price, currency)}, since {when(s.started_at)}
              {s.ends_at && `, ends ${when(s.ends_at)}`}
            </span>{' '}
            {s.status === 'active' && (
              <button type="button" class="danger" onClick={() => ask.run(s.order)}>
                Cancel subscription
              </button>
            )}
          </li>
        ))}
      </ul>
      <ErrorNote error={ask.error} />
      {asking && (
        <div class="card inset" role="alertdialog" aria-label="Cancel the subscription">
          <p>
            <strong>Cancel {asking.item}?</strong>
          </p>
          <p>{forPeople(asking.ends)}</p>
          <button type="button" class="danger" onClick={() => cancel.run()} disabled={cancel.busy}>
            Confirm cancellation
          </button>{' '}
          <button type="button" class="secondary" onClick={() => setAsking(undefined)}>
            Keep it
          </button>
          <ErrorNote error={cancel.error} />
        </div>
      )}
    </Section>
  );
}

/** A country as people write it ("United States"; the address data names it in capitals), from its code. */
function countryWords(code: string, name: string): string {
  try {
    return new Intl.DisplayNames(undefined, { type: 'region' }).of(code) ?? name;
  } catch {
    return name;
  }
}
