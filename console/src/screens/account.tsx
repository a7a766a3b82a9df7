import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useSession } from '../session';
import { useAction, useLoad } from '../ui/hooks';
import { CopyButton, ErrorNote, Field, LoadState, Section, Select, Tabs, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { PasswordField, useReauth } from '../ui/reauth';

const value = (e: Event) => (e.target as HTMLInputElement).value;

export function AccountPage({ tab }: { tab?: string }) {
  const current = tab ? `/${tab}` : '';
  return (
    <>
      <h1>Your account</h1>
      <Tabs
        base="/account"
        tabs={[
          ['', 'Profile'],
          ['/tokens', 'Access tokens'],
          ['/ssh-keys', 'SSH keys'],
        ]}
        current={current}
      />
      {current === '/tokens' ? <Tokens /> : current === '/ssh-keys' ? <SshKeys /> : <Profile />}
    </>
  );
}

function Profile() {
  const { me } = useSession();
  const [ended, setEnded] = useState<number>();
  const reauth = useReauth();
  const end = useAction(async () => {
    if (!me) return;
    setEnded(undefined);
    const r = await reauth.run(() =>
      ok(api.POST('/users/{id}/sessions/end-others', { params: { path: { id: me.id } } })),
    );
    if (r) setEnded(r.ended);
  });
  return (
    <Section title="Profile">
      <dl>
        <dt>Name</dt>
        <dd>{me?.name}</dd>
        <dt>E-mail address</dt>
        <dd>{me?.email}</dd>
      </dl>
      <ActionForm onSubmit={() => end.run()}>
        <PasswordField reauth={reauth} error={end.error} />
        <button type="submit" class="secondary" disabled={end.busy}>
          End other sessions
        </button>
        {ended !== undefined && (
          <p role="status">
            Ended {ended} other session{ended === 1 ? '' : 's'}.
          </p>
        )}
        <ErrorNote error={end.error} />
      </ActionForm>
    </Section>
  );
}

function Tokens() {
  const tokens = useLoad(() => ok(api.GET('/me/tokens')), []);
  const teams = useLoad(() => ok(api.GET('/teams')), []);
  const [purpose, setPurpose] = useState('');
  const [team, setTeam] = useState('');
  const [days, setDays] = useState<7 | 30 | 90>(30);
  const [issued, setIssued] = useState<string>();
  const create = useAction(async () => {
    const team_id = team || teams.data?.data[0]?.id || '';
    const r = await ok(api.POST('/me/tokens', { body: { purpose, team_id, expires_in_days: days } }));
    setIssued(r.token);
    setPurpose('');
    await tokens.reload();
  });
  const revoke = useAction(async (id: string) => {
    await ok(api.DELETE('/me/tokens/{id}', { params: { path: { id } } }));
    await tokens.reload();
  });
  const teamName = (id: string) => teams.data?.data.find((t) => t.id === id)?.name ?? id;
  return (
    <>
      <Section title="Create a token">
        {issued && (
          <div class="notice" role="status">
            <p>Your new token, shown this once: copy it now.</p>
            <p>
              <code class="break" data-token>
                {issued}
              </code>{' '}
              <CopyButton text={issued} />
            </p>
          </div>
        )}
        <ActionForm action={create}>
          <Field
            label="What it is for"
            name="purpose"
            required
            value={purpose}
            onInput={(e) => setPurpose(value(e))}
            error={create.error}
          />
          <Select
            label="Team"
            name="team_id"
            value={team || teams.data?.data[0]?.id}
            onChange={(e) => setTeam((e.target as HTMLSelectElement).value)}
            options={(teams.data?.data ?? []).map((t) => ({ value: t.id, label: t.name }))}
            error={create.error}
          />
          <Select
            label="Expires in"
            name="expires_in_days"
            value={String(days)}
            onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value) as 7 | 30 | 90)}
            options={[7, 30, 90].map((d) => ({ value: String(d), label: `${d} days` }))}
            error={create.error}
          />
          <button type="submit" disabled={create.busy || !teams.data}>
            Create token
          </button>
        </ActionForm>
      </Section>
      <Section title="Tokens">
        <LoadState load={tokens} what="tokens" />
        <ul class="list">
          {tokens.data?.data.map((t) => (
            <li key={t.id}>
              <strong>{t.purpose}</strong> <span class={`status ${t.status}`}>{t.status}</span>{' '}
              <span class="muted">
                {teamName(t.team_id)}; expires {when(t.expires_at)};{' '}
                {t.last_used_at ? `last used ${when(t.last_used_at)}` : 'never used'}
              </span>{' '}
              {t.status === 'active' && (
                <button type="button" class="danger" onClick={() => revoke.run(t.id)}>
                  Revoke
                </button>
              )}
            </li>
          ))}
        </ul>
        <ErrorNote error={revoke.error} />
      </Section>
    </>
  );
}

function SshKeys() {
  const keys = useLoad(() => ok(api.GET('/me/ssh-keys')), []);
  const [name, setName] = useState('');
  const [publicKey, setPublicKey] = useState('');
  const add = useAction(async () => {
    await ok(api.POST('/me/ssh-keys', { body: { name, public_key: publicKey } }));
    setName('');
    setPublicKey('');
    await keys.reload();
  });
  const remove = useAction(async (id: string) => {
    await ok(api.DELETE('/me/ssh-keys/{id}', { params: { path: { id } } }));
    await keys.reload();
  });
  return (
    <Section title="SSH keys">
      <LoadState load={keys} what="keys" />
      <ul class="list">
        {keys.data?.data.map((k) => (
          <li key={k.id}>
            <strong>{k.name}</strong> <code class="break">{k.fingerprint}</code>{' '}
            <button type="button" class="danger" onClick={() => remove.run(k.id)}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <ActionForm action={add}>
        <Field label="Name" name="name" required value={name} onInput={(e) => setName(value(e))} error={add.error} />
        <Field
          label="Public key"
          name="public_key"
          required
          value={publicKey}
          onInput={(e) => setPublicKey(value(e))}
          error={add.error}
        />
        <button type="submit" disabled={add.busy}>
          Add key
        </button>
      </ActionForm>
    </Section>
  );
}
