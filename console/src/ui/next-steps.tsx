import { api, ok } from '../api/client';
import { useAction, useLoad } from './hooks';
import { ErrorNote, Section } from './parts';

const LABELS: Record<string, [string, string]> = {
  connect_repository: ['Connect a repository', 'Open a project and connect its git repository.'],
  first_deploy: ['Deploy', 'Open an environment and press "Deploy".'],
  add_domain: ['Add a domain', "Add it on the environment's Domains page and create its TXT record."],
  create_token: ['Create a token', 'For CI: Account, Access tokens.'],
  invite_teammate: ['Invite a teammate', "On the team's People page."],
};

/** A team's next steps (GET /teams/{id}/settings), each done from the team's real state; hidden on request. */
export function NextSteps({ teamId, teamName }: { teamId: string; teamName: string }) {
  const path = { params: { path: { id: teamId } } };
  const settings = useLoad(() => ok(api.GET('/teams/{id}/settings', path)), [teamId]);
  const hide = useAction(async () => {
    await ok(api.POST('/teams/{id}/next-steps/hide', path));
    await settings.reload();
  });
  const steps = settings.data?.next_steps;
  if (!steps || steps.every((s) => s.done)) return null;
  return (
    <Section title={`Next steps for ${teamName}`}>
      <ul class="steps" aria-label="Next steps">
        {steps.map((s) => (
          <li key={s.id} class={s.done ? 'done' : ''}>
            <span aria-hidden="true">{s.done ? '✓' : '○'}</span> <strong>{LABELS[s.id]?.[0] ?? s.id}</strong>
            {s.done ? <span class="muted"> (done)</span> : <span class="muted"> {LABELS[s.id]?.[1]}</span>}
          </li>
        ))}
      </ul>
      <button type="button" class="secondary" onClick={() => hide.run()} disabled={hide.busy}>
        Hide these steps
      </button>
      <ErrorNote error={hide.error} />
    </Section>
  );
}
