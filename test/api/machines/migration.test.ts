import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { createProject, createTeam, createUser } from '../../helpers/fixtures';
import { down, up } from '../../../db/migrations/500_machines';

const t = useTestContext();

describe('migration 500 (machines)', () => {
  it('gives every environment that existed before it a web server and a build machine on the default plans', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const project = await createProject(t, team, { repository_url: '/nonexistent' });
    await down(t.deps.knex);
    const env = await createEnvironment(t, project, { name: 'staging' });
    await up(t.deps.knex);
    const server = await t.deps.knex('servers').where({ environment_id: env.id }).first();
    expect(server).toMatchObject({
      role: 'web',
      name: 'staging-web',
      plan: 'small',
      memory_mb: 512,
      disk_gb: 10,
      team_id: team.id,
      project_id: project.id,
    });
    expect(Number(server.cpu)).toBe(0.5);
    const build = await t.deps.knex('build_machines').where({ environment_id: env.id }).first();
    expect(build).toMatchObject({ provider: 'local', plan: 'build-small', memory_mb: 1024 });
  });
});
