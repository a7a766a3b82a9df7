import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { Check, Field, FieldErrors, LoadState, Section, TextArea } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { lines } from '../lib/lines';

type Edge = Answer<'getProjectEdge'>;

/** The project's edge rules as one form and one save (PATCH): every refused field shows beside its input. */
export function ProjectEdge({ id }: { id: string }) {
  const edge = useLoad(() => ok(api.GET('/projects/{id}/edge', { params: { path: { id } } })), [id]);
  return (
    <Section title="Edge rules">
      <LoadState load={edge} what="edge rules" />
      {edge.data && <EdgeRulesForm id={id} initial={edge.data} />}
    </Section>
  );
}

/** The form starts from the rules as loaded once; a save shows what the API kept. */
function EdgeRulesForm({ id, initial }: { id: string; initial: Edge }) {
  const path = { params: { path: { id } } };
  const [form, setForm] = useState<Record<string, string | boolean>>(() => toForm(initial));
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    const num = (k: string) => (form[k] === '' ? undefined : Number(form[k]));
    const body = {
      blocked_addresses: lines(String(form.blocked_addresses ?? '')),
      blocked_user_agents: lines(String(form.blocked_user_agents ?? '')),
      rate_limit:
        form.rate_requests === '' && form.rate_seconds === ''
          ? null
          : { requests: num('rate_requests')!, per_seconds: num('rate_seconds')! },
      hsts:
        form.hsts_max_age === ''
          ? null
          : {
              max_age: num('hsts_max_age')!,
              include_subdomains: Boolean(form.hsts_subdomains),
              preload: Boolean(form.hsts_preload),
            },
      compression: Boolean(form.compression),
      pages: {
        maintenance: String(form.maintenance_page ?? '') || null,
        error: String(form.error_page ?? '') || null,
      },
    };
    const fresh = await ok(api.PATCH('/projects/{id}/edge', { ...path, body }));
    setForm(toForm(fresh));
    setSaved(true);
  });
  const set = (k: string) => (v: string | boolean) => setForm({ ...form, [k]: v });
  const text = (k: string) => String(form[k] ?? '');
  const input = (k: string) => (e: Event) => set(k)((e.target as HTMLInputElement).value);
  return (
    <ActionForm action={save}>
      <TextArea
        label="Blocked addresses (one address or CIDR a line)"
        name="blocked_addresses"
        value={text('blocked_addresses')}
        onInput={set('blocked_addresses')}
        error={save.error}
      />
      <TextArea
        label="Blocked user agents (one a line)"
        name="blocked_user_agents"
        value={text('blocked_user_agents')}
        onInput={set('blocked_user_agents')}
        error={save.error}
      />
      <fieldset class="plain">
        <legend>Rate limit</legend>
        <Field
          label="Requests"
          name="rate_limit.requests"
          inputMode="numeric"
          value={text('rate_requests')}
          onInput={input('rate_requests')}
          error={save.error}
        />
        <Field
          label="Per seconds"
          name="rate_limit.per_seconds"
          inputMode="numeric"
          value={text('rate_seconds')}
          onInput={input('rate_seconds')}
          error={save.error}
        />
        <FieldErrors error={save.error} prefix="rate_limit" exact />
      </fieldset>
      <fieldset class="plain">
        <legend>HSTS</legend>
        <Field
          label="Max age (seconds; empty for none)"
          name="hsts.max_age"
          inputMode="numeric"
          value={text('hsts_max_age')}
          onInput={input('hsts_max_age')}
          error={save.error}
        />
        <Check
          label="Include subdomains"
          name="hsts_subdomains"
          checked={Boolean(form.hsts_subdomains)}
          onChange={set('hsts_subdomains')}
        />
        <Check
          label="Preload"
          name="hsts_preload"
          checked={Boolean(form.hsts_preload)}
          onChange={set('hsts_preload')}
        />
        <FieldErrors error={save.error} prefix="hsts" exact />
      </fieldset>
      <Check label="Compression" name="compression" checked={Boolean(form.compression)} onChange={set('compression')} />
      <TextArea
        label="Maintenance page (HTML)"
        name="pages.maintenance"
        value={text('maintenance_page')}
        onInput={set('maintenance_page')}
        error={save.error}
      />
      <TextArea
        label="Error page (HTML)"
        name="pages.error"
        value={text('error_page')}
        onInput={set('error_page')}
        error={save.error}
      />
      <button type="submit" disabled={save.busy}>
        Save edge rules
      </button>
      {saved && <p role="status">Saved.</p>}
    </ActionForm>
  );
}

function toForm(e: Edge): Record<string, string | boolean> {
  return {
    blocked_addresses: e.blocked_addresses.join('\n'),
    blocked_user_agents: e.blocked_user_agents.join('\n'),
    rate_requests: e.rate_limit ? String(e.rate_limit.requests) : '',
    rate_seconds: e.rate_limit ? String(e.rate_limit.per_seconds) : '',
    hsts_max_age: e.hsts ? String(e.hsts.max_age) : '',
    hsts_subdomains: e.hsts?.include_subdomains ?? false,
    hsts_preload: e.hsts?.preload ?? false,
    compression: e.compression,
    maintenance_page: e.pages.maintenance ?? '',
    error_page: e.pages.error ?? '',
  };
}
