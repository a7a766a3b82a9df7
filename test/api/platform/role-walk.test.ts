import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../../api/routes';
import type { RouteDef } from '../../../api/lib/define-route';
import { can, ROLES, type Role } from '../../../api/lib/policy';
import { useTestContext } from '../../helpers/context';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';

/**
 * Walks every route whose permission the router enforces (a `scope` and a `permission`): for each role,
 * a member of the resource's team with that role gets 403 `forbidden` exactly where the policy says the
 * role may not, and never where it may. Each route gets a world of its own (routes that delete or change
 * things do not disturb the next).
 */
const t = useTestContext({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
const name = (r: RouteDef) => `${r.method.toUpperCase()} ${r.path}`;
const walked = allRoutes().filter((r) => r.scope && r.permission);

/** A team with a member of every role, and one resource of each scope kind in it. */
async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const agents = { owner: await sessionAgent(t, owner) } as Record<Role, Agent>;
  for (const role of ROLES.filter((r) => r !== 'owner')) {
    const user = await createUser(t);
    await addMember(t, team, user, role);
    agents[role] = await sessionAgent(t, user);
  }
  const project = await createProject(t, team);
  const environment = await createEnvironment(t, project);
  const taskId = randomUUID();
  await t.deps.knex('tasks').insert({
    id: taskId,
    team_id: team.id,
    project_id: project.id,
    environment_id: environment.id,
    kind: 'deployments',
    type: 'build',
    status: 'succeeded',
    account_via: 'session',
    workflow_id: `build-${taskId}`,
  });
  const [invitation] = await t.deps
    .knex('invitations')
    .insert({
      team_id: team.id,
      email: `invited-${randomUUID()}@example.test`,
      role: 'developer',
      expires_at: new Date(Date.now() + 86_400_000),
    })
    .returning('id');
  const other = await createUser(t);
  const membership = await addMember(t, team, other, 'viewer');
  const [domain] = await t.deps
    .knex('domains')
    .insert({
      team_id: team.id,
      project_id: project.id,
      environment_id: environment.id,
      hostname: `${randomUUID()}.example.test`,
      verification_value: 'x',
    })
    .returning('id');
  /** The id a scope kind names, in this world. */
  const [server] = await t.deps
    .knex('servers')
    .insert({
      team_id: team.id,
      project_id: project.id,
      environment_id: environment.id,
      role: 'web',
      name: 'web',
      plan: 'small',
      cpu: 0.5,
      memory_mb: 512,
      disk_gb: 10,
    })
    .returning('id');
  const order = `ord_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
  await t.deps
    .knex('subscriptions')
    .insert({ order, team_id: team.id, kind: 'server', item: 'web server', monthly_price: 8, currency: 'EUR' });
  const [integration] = await t.deps
    .knex('integrations')
    .insert({
      team_id: team.id,
      kind: 'webhook',
      name: 'hook',
      events: ['task.failed'],
      config: { url: 'https://example.com/hook' },
      sealed_secret: 'x',
    })
    .returning('id');
  const [ticket] = await t.deps
    .knex('tickets')
    .insert({ team_id: team.id, subject: 'help', body: 'please', category: 'other' })
    .returning('id');
  const [destination] = await t.deps
    .knex('backup_destinations')
    .insert({ team_id: team.id, name: 'dest', kind: 'local', settings: { path: '/nonexistent' } })
    .returning('id');
  const [snapshot] = await t.deps
    .knex('backups')
    .insert({
      team_id: team.id,
      project_id: project.id,
      environment_id: environment.id,
      destination_id: destination.id,
      status: 'available',
      trigger: 'manual',
      object_key: 'x',
      key_fingerprint: 'x',
    })
    .returning('id');
  const [volume] = await t.deps
    .knex('storage_disks')
    .insert({
      team_id: team.id,
      project_id: project.id,
      environment_id: environment.id,
      disk: 'files',
      size_gb: 5,
      location: t.config.storageRoots[0],
    })
    .returning('id');
  const [repositoryHost] = await t.deps
    .knex('repository_hosts')
    .insert({ team_id: team.id, kind: 'https', host: 'git.example.com', username: 'ci', sealed_secret: 'x' })
    .returning('id');
  /** The id a scope kind (or another path parameter) names, in this world. */
  const ids: Record<string, string> = {
    team: team.id,
    project: project.id,
    environment: environment.id,
    task: taskId,
    invitation: invitation.id,
    membership: membership.id,
    domain: domain.id,
    server: server.id,
    'backup destination': destination.id,
    snapshot: snapshot.id,
    integration: integration.id,
    ticket: ticket.id,
    'repository host': repositoryHost.id,
    order,
    volume: volume.id,
    disk: 'files',
  };
  return { agents, ids };
}

describe('the route table', () => {
  it('has routes whose permission the router enforces', () => {
    expect(walked.length).toBeGreaterThan(20);
  });

  it("publishes each route's permission in the OpenAPI document as x-permission", async () => {
    const doc = (await t.agent().get('/openapi.json')).body;
    for (const r of allRoutes().filter((x) => x.permission)) {
      expect({ route: name(r), permission: doc.paths[r.path][r.method]['x-permission'] }).toEqual({
        route: name(r),
        permission: r.permission,
      });
    }
  });
});

describe('every role', () => {
  it.each(walked.map((r) => [name(r), r] as const))('%s: 403 forbidden exactly where the policy says', async (_, r) => {
    const w = await world();
    const id = w.ids[r.scope!.what];
    expect(id, `the walk knows how to make a ${r.scope!.what}: add it to world()`).toBeTruthy();
    const path = r.path.replace(/\{([a-z_]+)\}/gi, (_m, p: string) =>
      p === (r.scope!.param ?? 'id') ? id : (w.ids[p] ?? 'x'),
    );
    const outcomes: Record<string, string> = {};
    const expected: Record<string, string> = {};
    // Roles the policy refuses go first: an allowed DELETE would leave nothing for the next role.
    const order = [...ROLES].sort((a, b) => Number(can(a, r.permission!)) - Number(can(b, r.permission!)));
    for (const role of order) {
      const res = await w.agents[role].request(r.method.toUpperCase(), path, r.method === 'get' ? {} : { body: {} });
      expect(res.status, `${role}: ${res.text}`).toBeLessThan(500);
      outcomes[role] = res.status === 403 && res.body?.error?.code === 'forbidden' ? 'forbidden' : 'allowed';
      expected[role] = can(role, r.permission!) ? 'allowed' : 'forbidden';
    }
    expect(outcomes).toEqual(expected);
  });
});
