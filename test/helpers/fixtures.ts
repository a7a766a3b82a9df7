import { User } from '../../db/models/user';
import { Session } from '../../db/models/session';
import { Team } from '../../db/models/team';
import { Membership } from '../../db/models/membership';
import { AccessToken } from '../../db/models/access-token';
import { Project } from '../../db/models/project';
import { hashPassword } from '../../core/passwords';
import { generateSecret, randomToken, sessionDigest, tokenDigest } from '../../api/lib/token-format';
import type { Role } from '../../api/lib/policy';
import type { TestContext } from './context';
import type { Agent } from './http';

/**
 * Setup shortcuts through the real database, for tests whose subject is elsewhere. The behaviour
 * under test always goes through HTTP; the account flows themselves are tested through HTTP in
 * test/api/account.
 */
let counter = 0;
export const PASSWORD = 'correct horse battery staple';
/** PASSWORD's argon2id hash, made once per file's process (each hash costs tens of milliseconds of CPU). */
let passwordHash: Promise<string> | undefined;

export async function createUser(
  t: TestContext,
  attrs: Partial<{ email: string; name: string; confirmed: boolean }> = {},
) {
  counter += 1;
  return User.query(t.deps.knex).insertAndFetch({
    email: attrs.email ?? `user${counter}-${Date.now()}@example.test`,
    name: attrs.name ?? `User ${counter}`,
    password_hash: await (passwordHash ??= hashPassword(PASSWORD)),
    email_confirmed_at: attrs.confirmed === false ? null : new Date(),
  });
}

/** A browser-session agent for the user (cookie + CSRF), as after POST /session. */
export async function sessionAgent(t: TestContext, user: User): Promise<Agent> {
  const secret = randomToken();
  const session = await Session.query(t.deps.knex).insertAndFetch({
    secret_digest: sessionDigest(secret),
    user_id: user.id,
    kind: 'browser',
    csrf_token: randomToken(),
    expires_at: new Date(Date.now() + 24 * 3600_000),
  });
  const agent = t.agent();
  agent.cookies.set('vc_session', secret);
  agent.csrf = session.csrf_token;
  return agent;
}

export async function createTeam(t: TestContext, owner: User, name = `Team ${++counter}`) {
  const team = await Team.query(t.deps.knex).insertAndFetch({ name, settings: {} });
  await Membership.query(t.deps.knex).insert({ team_id: team.id, user_id: owner.id, role: 'owner' });
  return team;
}

export async function addMember(t: TestContext, team: Team, user: User, role: Role) {
  return Membership.query(t.deps.knex).insertAndFetch({ team_id: team.id, user_id: user.id, role });
}

/** A personal access token string for user in team (as POST /me/tokens would issue). */
export async function createAccessToken(t: TestContext, user: User, team: Team, days = 30, purpose = 'ci') {
  const token = generateSecret('vcp_');
  await AccessToken.query(t.deps.knex).insert({
    user_id: user.id,
    team_id: team.id,
    purpose,
    digest: tokenDigest(token, t.deps.secrets.tokenKey.key),
    key_id: t.deps.secrets.tokenKey.id,
    expires_in_days: days,
    expires_at: new Date(Date.now() + days * 86_400_000),
  });
  return token;
}

export async function createProject(
  t: TestContext,
  team: Team,
  attrs: Partial<{ name: string; repository_url: string }> = {},
) {
  return Project.query(t.deps.knex).insertAndFetch({
    team_id: team.id,
    name: attrs.name ?? `project-${++counter}`,
    repository_url: attrs.repository_url ?? null,
  });
}

/**
 * A PostgreSQL service row of the environment, `available`, with no database behind it: for screens and
 * refusals that only read the row (nothing here connects to it).
 */
export function availableServiceRow(env: { id: string; team_id: string; project_id: string }, name: string) {
  return {
    team_id: env.team_id,
    project_id: env.project_id,
    environment_id: env.id,
    kind: 'postgresql',
    version: '16',
    plan: 'small',
    status: 'available',
    database_name: name,
    role_name: name,
    password_sealed: 'not used here',
  };
}

/**
 * A host row as its agent registers it (address 127.0.0.9, 2 CPUs, 4,096 MB, 50 GB, instance ports 30000-30999):
 * another machine, for placement and for what is bound to it. `heartbeatSecondsAgo`: when it last beat (default
 * now: ready); `status` and `storageRoots` as its agent would set them.
 */
export async function insertHost(
  t: TestContext,
  name: string,
  o: { memoryMb?: number; status?: string; heartbeatSecondsAgo?: number; storageRoots?: string[] } = {},
): Promise<void> {
  await t.deps.knex('hosts').insert({
    name,
    address: '127.0.0.9',
    ...(o.status ? { status: o.status } : {}),
    cpu: 2,
    memory_mb: o.memoryMb ?? 4096,
    disk_gb: 50,
    ...(o.storageRoots ? { storage_roots: o.storageRoots } : {}),
    instance_ports_from: 30000,
    instance_ports_to: 30999,
    instance_token: `token-${name}`,
    heartbeat_at: t.deps.knex.raw('now() - make_interval(secs => ?)', [o.heartbeatSecondsAgo ?? 0]),
  });
}
