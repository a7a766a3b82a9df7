import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { PASSWORD, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';

/**
 * The password asked again over a protected environment (restore, sync) is a credential like any other: each
 * wrong one counts for the client address, and past the limit the address gets 429, whatever it sends next
 * (the right password too, and a sign-in). Three failures refuse the address in this file.
 */
const t = useTestContext({ env: { FAILED_CREDENTIALS_LIMIT: '3', FAILED_CREDENTIALS_BLOCK_SECONDS: '600' } });

describe('a wrong password on restore or sync over a protected environment', () => {
  it('counts as a failed credential of the address: past the limit the address gets 429 and nothing starts', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const project = await createProject(t, team);
    const production = await createEnvironment(t, project, { name: 'production' });
    await t.deps.knex('environments').where({ id: production.id }).update({ protected: true });
    const staging = await createEnvironment(t, project, { name: 'staging' });
    const [dest] = await t.deps
      .knex('backup_destinations')
      .insert({ team_id: team.id, name: 'disk', kind: 'local', settings: JSON.stringify({ path: '/nowhere' }) })
      .returning('id');
    const [snapshot] = await t.deps
      .knex('backups')
      .insert({
        team_id: team.id,
        project_id: project.id,
        environment_id: production.id,
        destination_id: dest.id,
        status: 'available',
        trigger: 'manual',
        contents: JSON.stringify(['files']),
        object_key: `${production.id}/s.vcb`,
        size_bytes: 1,
        key_fingerprint: 'x',
      })
      .returning('id');
    const owner = await sessionAgent(t, user);
    const restore = (password: string) =>
      owner.post(`/environments/${production.id}/backups/${snapshot.id}/restore`, { password });

    // Two wrong passwords on restore and one on sync: each a 403, each counted.
    for (const res of [
      await restore('not the password'),
      await restore('still not it'),
      await owner.post(`/environments/${production.id}/sync`, {
        from_environment_id: staging.id,
        confirm: true,
        password: 'wrong again',
      }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('reauthentication_required');
    }

    // The address is refused now, even with the right password, and nothing was started.
    const refused = await restore(PASSWORD);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const started = await t.deps.knex('tasks').whereIn('type', ['restore', 'sync']).count({ n: '*' }).first();
    expect(Number(started?.n)).toBe(0);
    // The same guard as the sign-in's: it refuses the address there too.
    const signIn = await t.agent().post('/session', { email: user.email, password: PASSWORD });
    expect(signIn.status).toBe(429);
  });
});
