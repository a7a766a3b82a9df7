import { useState } from 'preact/hooks';
import type { Answer } from '../api/types';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { Check, ErrorNote, Field, Loading, LoadState, Section, TextArea } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { lines } from '../lib/lines';

/** Who may reach the environment: allowed addresses, a password, stickiness; one save. */
export function EnvironmentEdge({ id }: { id: string }) {
  const edge = useLoad(() => ok(api.GET('/environments/{id}/edge', { params: { path: { id } } })), [id]);
  return (
    <Section title="Edge">
      <LoadState load={edge} what="edge settings" />
      {edge.data && <EdgeForm id={id} initial={edge.data} />}
    </Section>
  );
}

/** The form starts from the settings as loaded once; a save shows what the API kept. */
function EdgeForm({ id, initial }: { id: string; initial: Answer<'getEnvironmentEdge'> }) {
  const [current, setCurrent] = useState(initial);
  const [allowed, setAllowed] = useState(initial.allowed_addresses.join('\n'));
  const [username, setUsername] = useState(initial.password.username ?? '');
  const [password, setPassword] = useState('');
  const [sticky, setSticky] = useState(initial.stickiness);
  const [saved, setSaved] = useState(false);
  const save = useAction(async (removePassword?: boolean) => {
    setSaved(false);
    const body = {
      allowed_addresses: lines(allowed),
      stickiness: sticky,
      ...(removePassword ? { password: null } : password ? { password: { username, password } } : {}),
    };
    const fresh = await ok(api.PATCH('/environments/{id}/edge', { params: { path: { id } }, body }));
    setCurrent(fresh);
    setAllowed(fresh.allowed_addresses.join('\n'));
    setPassword('');
    setSaved(true);
  });
  return (
    <ActionForm action={save}>
      <TextArea
        label="Allowed addresses (one address or CIDR a line; empty for everyone)"
        name="allowed_addresses"
        value={allowed}
        onInput={setAllowed}
        error={save.error}
      />
      <p class="muted">Password: {current.password.enabled ? `on, user ${current.password.username}` : 'off'}</p>
      <Field
        label="Username"
        name="password.username"
        value={username}
        onInput={(e) => setUsername((e.target as HTMLInputElement).value)}
        error={save.error}
      />
      <Field
        label="New password (write-only)"
        name="password.password"
        type="password"
        autocomplete="new-password"
        value={password}
        onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
        error={save.error}
      />
      <Check label="Sticky sessions" name="stickiness" checked={sticky} onChange={setSticky} />
      <div class="buttons">
        <button type="submit" disabled={save.busy}>
          Save edge settings
        </button>
        {current.password.enabled && (
          <button type="button" class="secondary" onClick={() => save.run(true)}>
            Remove the password
          </button>
        )}
      </div>
      {saved && <p role="status">Saved.</p>}
    </ActionForm>
  );
}

/** The CDN: on or off, its default TTL, and "Clear" (a task). */
export function EnvironmentCdn({ id }: { id: string }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const cdn = useLoad(() => ok(api.GET('/environments/{id}/cdn', path)), [id]);
  const [ttl, setTtl] = useState<string>();
  const [paths, setPaths] = useState('');
  const save = useAction(async (enabled?: boolean) => {
    const body = {
      ...(enabled !== undefined ? { enabled } : {}),
      ...(ttl !== undefined ? { default_ttl_seconds: Number(ttl) } : {}),
    };
    await ok(api.PATCH('/environments/{id}/cdn', { ...path, body }));
    await cdn.reload();
  });
  const clear = useAction(async () => {
    const list = lines(paths);
    const task = await ok(
      api.POST('/environments/{id}/cdn/clear', { ...path, body: list.length ? { paths: list } : {} }),
    );
    route(`/tasks/${task.id}`);
  });
  const d = cdn.data;
  return (
    <Section title="CDN">
      {cdn.loading && !d ? <Loading what="the CDN" /> : <ErrorNote error={cdn.error} />}
      {d && (
        <>
          <p>The CDN is {d.enabled ? 'on' : 'off'}.</p>
          <ActionForm action={save}>
            <Field
              label="Default TTL (seconds)"
              name="default_ttl_seconds"
              inputMode="numeric"
              value={ttl ?? String(d.default_ttl_seconds)}
              onInput={(e) => setTtl((e.target as HTMLInputElement).value)}
              error={save.error}
            />
            <div class="buttons">
              <button type="submit" disabled={save.busy}>
                Save
              </button>
              <button type="button" class="secondary" onClick={() => save.run(!d.enabled)} disabled={save.busy}>
                {d.enabled ? 'Turn the CDN off' : 'Turn the CDN on'}
              </button>
            </div>
          </ActionForm>
          <TextArea
            label="Paths to clear (one a line; empty for everything)"
            name="paths"
            value={paths}
            onInput={setPaths}
            error={clear.error}
          />
          <button type="button" class="secondary" onClick={() => clear.run()} disabled={clear.busy}>
            Clear
          </button>
          <ErrorNote error={clear.error} />
        </>
      )}
    </Section>
  );
}
