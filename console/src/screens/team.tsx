import { TEAM_TABS } from './tabs';
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { rememberTeam } from '../lib/current-team';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, LoadState, Section, Select, Tabs, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { BackupDestinations } from './team-destinations';
import { TeamBilling, TeamSettings } from './team-settings';
import { Activity, RepositoryHosts } from './team-connections';
import { Integrations } from './team-integrations';
import { Tickets } from './team-tickets';
import { usePageTitle } from '../ui/names';
import { createsProjects, NewProjectForm } from '../ui/new-project';

export function TeamPage({ id, tab }: { id: string; tab?: string }) {
  const teams = useLoad(() => ok(api.GET('/teams')), []);
  useEffect(() => rememberTeam(id), [id]);
  const team = teams.data?.data.find((t) => t.id === id);
  const current = tab ? `/${tab}` : '';
  usePageTitle(team?.name);
  return (
    <>
      <h1>{team?.name ?? 'Team'}</h1>
      <Tabs base={`/teams/${id}`} tabs={TEAM_TABS} current={current} />
      {current === '' ? (
        <TeamProjects id={id} creates={!!team && createsProjects(team)} team={team} />
      ) : current === '/people' ? (
        <People id={id} />
      ) : current === '/backup-destinations' ? (
        <BackupDestinations id={id} />
      ) : current === '/settings' ? (
        <TeamSettings id={id} onSaved={() => teams.reload()} />
      ) : current === '/billing' ? (
        <TeamBilling id={id} />
      ) : current === '/integrations' ? (
        <Integrations id={id} />
      ) : current === '/repository-hosts' ? (
        <RepositoryHosts id={id} />
      ) : current === '/tickets' ? (
        <Tickets id={id} />
      ) : current === '/activity' ? (
        <Activity id={id} />
      ) : (
        <p>No such section.</p>
      )}
    </>
  );
}

function TeamProjects({
  id,
  team,
  creates,
}: {
  id: string;
  team?: { id: string; name: string; role: string };
  creates: boolean;
}) {
  const projects = useLoad(() => ok(api.GET('/projects', { params: { query: { team_id: id } } })), [id]);
  return (
    <Section title="Projects">
      <LoadState load={projects} what="projects" />
      <ul class="list">
        {projects.data?.data.map((p) => (
          <li key={p.id}>
            <a href={`/projects/${p.id}`}>{p.name}</a>
          </li>
        ))}
      </ul>
      {projects.data?.data.length === 0 && (
        <p class="muted">No projects yet.{!creates && team && ' An admin or owner of the team creates them.'}</p>
      )}
      {creates && team && <NewProjectForm teams={[team]} />}
    </Section>
  );
}

type Role = 'owner' | 'admin' | 'developer' | 'viewer';

function People({ id }: { id: string }) {
  const people = useLoad(() => ok(api.GET('/teams/{id}/people', { params: { path: { id } } })), [id]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('developer');
  const invite = useAction(async () => {
    await ok(api.POST('/teams/{id}/invitations', { params: { path: { id } }, body: { email, role } }));
    setEmail('');
    await people.reload();
  });
  const change = useAction(async (membership: string, to: Role) => {
    await ok(api.PATCH('/memberships/{id}', { params: { path: { id: membership } }, body: { role: to } }));
    await people.reload();
  });
  const remove = useAction(async (membership: string, name: string) => {
    if (!confirm(`Remove ${name} from the team?`)) return;
    await ok(api.DELETE('/memberships/{id}', { params: { path: { id: membership } } }));
    await people.reload();
  });
  const [renewed, setRenewed] = useState<string>();
  // An invitation renewed (7 more days, e-mailed again) or revoked (it can no longer be accepted).
  const renew = useAction(async (invitation: string) => {
    setRenewed((await ok(api.POST('/invitations/{id}/renew', { params: { path: { id: invitation } } }))).email);
    await people.reload();
  });
  const revoke = useAction(async (invitation: string, to: string) => {
    if (!confirm(`Revoke the invitation of ${to}?`)) return;
    setRenewed(undefined);
    await ok(api.DELETE('/invitations/{id}', { params: { path: { id: invitation } } }));
    await people.reload();
  });
  const roles = people.data?.assignable_roles ?? [];
  return (
    <>
      <Section title="People">
        <LoadState load={people} what="people" />
        <ErrorNote error={change.error ?? remove.error} />
        <ul class="list">
          {people.data?.data.map((m) => (
            <li key={m.id}>
              <strong>{m.name}</strong> <span class="muted">{m.email}</span>{' '}
              <label class="inline">
                Role{' '}
                <select
                  value={m.role}
                  onChange={(e) => change.run(m.id, (e.target as HTMLSelectElement).value as Role)}
                  aria-label={`Role of ${m.name}`}
                >
                  {['owner', 'admin', 'developer', 'viewer'].map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
              </label>{' '}
              <button type="button" class="danger" onClick={() => remove.run(m.id, m.name)}>
                Remove
              </button>
            </li>
          ))}
        </ul>
        {people.data && people.data.invitations.length > 0 && (
          <>
            <h3>Invitations</h3>
            <ul class="list">
              {people.data.invitations.map((i) => (
                <li key={i.id}>
                  {i.email} <span class="muted">{i.role}</span> <span class={`status ${i.status}`}>{i.status}</span>{' '}
                  <span class="muted">until {when(i.expires_at)}</span>{' '}
                  <span class="buttons">
                    <button
                      type="button"
                      class="secondary"
                      onClick={() => renew.run(i.id)}
                      disabled={renew.busy}
                      aria-label={`Renew the invitation of ${i.email}`}
                    >
                      Renew
                    </button>
                    <button
                      type="button"
                      class="danger"
                      onClick={() => revoke.run(i.id, i.email)}
                      disabled={revoke.busy}
                      aria-label={`Revoke the invitation of ${i.email}`}
                    >
                      Revoke
                    </button>
                  </span>
                </li>
              ))}
            </ul>
            {renewed && <p role="status">Renewed: e-mailed again to {renewed}.</p>}
            <ErrorNote error={renew.error ?? revoke.error} />
          </>
        )}
      </Section>
      {roles.length > 0 && (
        <Section title="Invite">
          <ActionForm action={invite}>
            <Field
              label="E-mail address"
              name="email"
              type="email"
              required
              value={email}
              onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
              error={invite.error}
            />
            <Select
              label="Role"
              name="role"
              value={role}
              onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}
              options={roles.map((r) => ({ value: r, label: r }))}
              error={invite.error}
            />
            <button type="submit" disabled={invite.busy}>
              Invite
            </button>
          </ActionForm>
        </Section>
      )}
    </>
  );
}
