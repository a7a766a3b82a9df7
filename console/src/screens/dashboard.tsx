import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, LoadState, Section } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { TaskList } from '../ui/tasks';
import { NextSteps } from '../ui/next-steps';
import { createsProjects, NewProjectForm } from '../ui/new-project';

const value = (e: Event) => (e.target as HTMLInputElement).value;

export function Dashboard() {
  const { route } = useLocation();
  const teams = useLoad(() => ok(api.GET('/teams')), []);
  const projects = useLoad(() => ok(api.GET('/projects')), []);
  const tasks = useLoad(() => ok(api.GET('/tasks', { params: { query: { limit: 10 } } })), []);
  const [teamName, setTeamName] = useState('');
  const createTeam = useAction(async () => {
    const team = await ok(api.POST('/teams', { body: { name: teamName } }));
    route(`/teams/${team.id}`);
  });
  const teamList = teams.data?.data ?? [];
  const projectList = projects.data?.data ?? [];
  const creatable = teamList.filter(createsProjects);
  return (
    <>
      <h1>Dashboard</h1>
      {teamList[0] && <NextSteps teamId={teamList[0].id} teamName={teamList[0].name} />}
      <div class="grid">
        <Section title="Teams">
          <LoadState load={teams} what="teams" />
          <ul class="list">
            {teamList.map((t) => (
              <li key={t.id}>
                <a href={`/teams/${t.id}`}>{t.name}</a> <span class="muted">{t.role}</span>
              </li>
            ))}
          </ul>
          <ActionForm action={createTeam}>
            <Field
              label="New team's name"
              name="name"
              required
              value={teamName}
              onInput={(e) => setTeamName(value(e))}
              error={createTeam.error}
            />
            <button type="submit" disabled={createTeam.busy}>
              Create team
            </button>
          </ActionForm>
        </Section>
        <Section title="Projects">
          <LoadState load={projects} what="projects" />
          <ul class="list">
            {projectList.map((p) => (
              <li key={p.id}>
                <a href={`/projects/${p.id}`}>{p.name}</a>{' '}
                <span class="muted">{p.repository?.url ?? 'no repository yet'}</span>
              </li>
            ))}
          </ul>
          {teamList.length === 0 ? (
            <p class="muted">A project belongs to a team: create a team first, or accept an invitation to one.</p>
          ) : creatable.length === 0 ? (
            <p class="muted">An admin or owner of your team creates its projects.</p>
          ) : (
            <NewProjectForm teams={creatable} chooseTeam />
          )}
        </Section>
      </div>
      <Section title="Latest tasks">
        {tasks.data ? <TaskList tasks={tasks.data.data} /> : <ErrorNote error={tasks.error} />}
      </Section>
    </>
  );
}
