import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { CopyButton, ErrorNote, Field, LoadState, Section, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

export function DomainsPage({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/environments/{id}/domains', path)), [id]);
  const [hostname, setHostname] = useState('');
  const add = useAction(async () => {
    await ok(api.POST('/environments/{id}/domains', { ...path, body: { hostname } }));
    setHostname('');
    await list.reload();
  });
  return (
    <>
      <Section title="Add a domain">
        <ActionForm action={add}>
          <Field
            label="Hostname"
            name="hostname"
            required
            value={hostname}
            onInput={(e) => setHostname((e.target as HTMLInputElement).value)}
            error={add.error}
            hint={list.data ? `${list.data.allowance.used} of ${list.data.allowance.limit} domains used` : undefined}
          />
          <button type="submit" disabled={add.busy}>
            Add domain
          </button>
        </ActionForm>
      </Section>
      <LoadState load={list} what="domains" />
      {list.data?.data.map((d) => (
        <Domain key={d.id} domain={d} onChange={() => list.reload()} />
      ))}
    </>
  );
}

type DomainRow = Parameters<typeof Domain>[0]['domain'];

function Domain(props: {
  domain: {
    id: string;
    hostname: string;
    status: string;
    verification: { type: string; name: string; value: string; checks_left?: number };
    verified_at: string | null;
    last_checked_at: string | null;
    certificate?: {
      status?: string;
      issuer?: string | null;
      expires_at?: string | null;
      last_error?: string | null;
    } | null;
  };
  onChange(): void;
}) {
  const [d, setD] = useState<DomainRow>(props.domain);
  const verify = useAction(async () => {
    setD((await ok(api.POST('/domains/{id}/verify', { params: { path: { id: d.id } } }))) as DomainRow);
  });
  const remove = useAction(async () => {
    if (!confirm(`Remove ${d.hostname}?`)) return;
    await ok(api.DELETE('/domains/{id}', { params: { path: { id: d.id } } }));
    props.onChange();
  });
  const record = `${d.verification.name} ${d.verification.type} "${d.verification.value}"`;
  return (
    <Section title={d.hostname}>
      <dl>
        <dt>Status</dt>
        <dd>
          <span class={`status ${d.status}`}>{d.status}</span>
          {d.verified_at && ` since ${when(d.verified_at)}`}
        </dd>
        {d.certificate?.status && (
          <>
            <dt>Certificate</dt>
            <dd>
              <span class={`status ${d.certificate.status}`}>{d.certificate.status}</span>
              {d.certificate.issuer && ` from ${d.certificate.issuer}`}
              {d.certificate.expires_at && `, until ${when(d.certificate.expires_at)}`}
              {d.certificate.last_error && <div class="muted">{d.certificate.last_error}</div>}
            </dd>
          </>
        )}
        <dt>Last checked</dt>
        <dd>{when(d.last_checked_at)}</dd>
        {d.verification.checks_left !== undefined && (
          <>
            <dt>Checks left this hour</dt>
            <dd>{d.verification.checks_left}</dd>
          </>
        )}
      </dl>
      {d.status !== 'verified' && (
        <>
          <p>Create this TXT record at your DNS provider:</p>
          <div class="record">
            <code class="break">{record}</code> <CopyButton text={d.verification.value} label="Copy value" />
          </div>
          <dl>
            <dt>Name</dt>
            <dd class="break">{d.verification.name}</dd>
            <dt>Value</dt>
            <dd class="break">{d.verification.value}</dd>
          </dl>
        </>
      )}
      <div class="buttons">
        {d.status !== 'verified' && (
          <button type="button" onClick={() => verify.run()} disabled={verify.busy}>
            Verify
          </button>
        )}
        <button type="button" class="danger" onClick={() => remove.run()} disabled={remove.busy}>
          Remove
        </button>
      </div>
      <ErrorNote error={verify.error ?? remove.error} />
    </Section>
  );
}
