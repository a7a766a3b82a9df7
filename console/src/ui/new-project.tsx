import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import { useAction } from './hooks';
import { Field, Select } from './parts';
import { ActionForm } from './action-form';

interface TeamRow {
  id: string;
  name: string;
  role: string;
}

/** The roles that create projects (POST /projects: admins and owners). */
export const createsProjects = (t: TeamRow) => t.role === 'owner' || t.role === 'admin';

/**
 * "Create project" in one of `teams` (the ones whose role creates projects), then on to the new project. The dashboard
 * shows the team it goes into (`chooseTeam`); a team's Projects tab creates it in that team.
 */
export function NewProjectForm({ teams, chooseTeam }: { teams: TeamRow[]; chooseTeam?: boolean }) {
  const { route } = useLocation();
  const [name, setName] = useState('');
  const [team, setTeam] = useState('');
  const create = useAction(async () => {
    const team_id = team || teams[0]?.id || '';
    const project = await ok(api.POST('/projects', { body: { team_id, name } }));
    route(`/projects/${project.id}`);
  });
  if (teams.length === 0) return null;
  return (
    <ActionForm action={create}>
      {chooseTeam && (
        <Select
          label="Team"
          name="team_id"
          value={team || teams[0].id}
          onChange={(e) => setTeam((e.target as HTMLSelectElement).value)}
          options={teams.map((t) => ({ value: t.id, label: t.name }))}
          error={create.error}
        />
      )}
      <Field
        label="New project's name"
        name="name"
        required
        hint="Lower-case letters, digits and dashes, as in shop-api"
        value={name}
        onInput={(e) => setName((e.target as HTMLInputElement).value)}
        error={create.error}
      />
      <button type="submit" disabled={create.busy}>
        Create project
      </button>
    </ActionForm>
  );
}
