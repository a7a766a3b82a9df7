import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';

/**
 * Local backup destinations, team by team (issue 27, item 8): a team's directory may not lie inside, contain or
 * equal another team's. Before, Alice saved Bob's `$ROOT/bob` as hers and got 201. A team's own destinations
 * may overlap (all their objects are the team's, under keys that never collide).
 */
const root = mkdtempSync(join(tmpdir(), 'vc-dest-teams-'));
const t = useTestContext({ env: { BACKUP_LOCAL_ROOTS: root } });
let alice: Awaited<ReturnType<typeof member>>;
let bob: Awaited<ReturnType<typeof member>>;
let bobDestination: string;

async function member() {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  return { agent: await sessionAgent(t, user), team };
}
const add = (who: typeof alice, name: string, path: string) =>
  who.agent.post(`/teams/${who.team.id}/backup-destinations`, { kind: 'local', name, path });
const destinations = async () => Number((await t.deps.knex('backup_destinations').count({ n: '*' }))[0].n);

beforeAll(async () => {
  alice = await member();
  bob = await member();
  for (const d of ['bob', 'bob/inner', 'bob/nightly', 'alice', 'shared']) mkdirSync(join(root, d), { recursive: true });
  const saved = await add(bob, 'bob', join(root, 'bob'));
  expect(saved.status, saved.text).toBe(201);
  bobDestination = saved.body.id;
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a local destination over another team's", () => {
  it("refuses Bob's own directory, one inside it, one containing it, and a link to it: 422 on path, nothing saved", async () => {
    symlinkSync(join(root, 'bob'), join(root, 'link-to-bob'));
    const n = await destinations();
    for (const path of [join(root, 'bob'), join(root, 'bob', 'inner'), root, join(root, 'link-to-bob')]) {
      const res = await add(alice, `mine-${Math.random().toString(36).slice(2, 8)}`, path);
      expect({ path, status: res.status }).toEqual({ path, status: 422 });
      expect(res.body.error.fields.path).toMatch(/another team's local backup destination/);
      expect(res.body.error.fields.path).not.toContain('bob');
    }
    expect(await destinations()).toBe(n);
  });

  it("allows a directory of Alice's own beside Bob's, and refuses to move it onto Bob's", async () => {
    const mine = await add(alice, 'alice', join(root, 'alice'));
    expect(mine.status, mine.text).toBe(201);
    const moved = await alice.agent.post(`/backup-destinations/${mine.body.id}`, { path: join(root, 'bob', 'inner') });
    expect(moved.status).toBe(422);
    expect(moved.body.error.fields).toHaveProperty('path');
    expect((await alice.agent.get(`/backup-destinations/${mine.body.id}`)).body.settings.path).toBe(
      join(root, 'alice'),
    );
  });

  it('lets a team overlap its own destinations (inside, and the same directory)', async () => {
    expect((await add(bob, 'nightly', join(root, 'bob', 'nightly'))).status).toBe(201);
    expect((await add(bob, 'again', join(root, 'bob'))).status).toBe(201);
  });

  it('refuses backups to one saved over an earlier one of another team before this rule, not to the earlier one', async () => {
    // as the attack left it: Alice's destination at Bob's directory, saved after his
    const [planted] = await t.deps
      .knex('backup_destinations')
      .insert({ team_id: alice.team.id, name: 'planted', kind: 'local', settings: { path: join(root, 'bob') } })
      .returning('id');
    const project = await createProject(t, alice.team);
    const env = await createEnvironment(t, project, { name: 'staging' });
    const refused = await alice.agent.post(`/environments/${env.id}/backups`, { destination_id: planted.id });
    expect(refused.status).toBe(422);
    expect(refused.body.error.fields.destination_id).toMatch(/another team's local backup destination/);
    expect((await alice.agent.get(`/backup-destinations/${planted.id}`)).body.last_error).toMatch(/another team's/);
    expect((await bob.agent.get(`/backup-destinations/${bobDestination}`)).body.last_error).toBeNull();
    expect(await t.deps.knex('tasks').where({ environment_id: env.id })).toEqual([]);
  });
});
