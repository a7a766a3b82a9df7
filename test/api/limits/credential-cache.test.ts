import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import {
  addMember,
  createAccessToken,
  createProject,
  createTeam,
  createUser,
  sessionAgent,
} from '../../helpers/fixtures';
import { Agent } from '../../helpers/http';
import { spawnApi, stopChildren } from '../../helpers/processes';
import { Environment } from '../../../db/models/environment';
import type { Team } from '../../../db/models/team';

/**
 * Token look-ups are cached in each API process (system/credential-cache.ts) and invalidated
 * through PostgreSQL LISTEN/NOTIFY. Two real API processes: a change made through one is in force on
 * the other. Process B keeps entries for 60 s, so a refusal within `untilAnswers`' 5 s can only come from the
 * invalidation. How soon it comes (target: long before its cache would expire) is measured by `npm run bench -- credentials`, not
 * timed here. A scenario runs again when B lost its listen connection during it (`withBListening`, read from
 * B's /metrics): a loss empties B's cache by design, and would decide the scenario's checks for another reason.
 */
const t = useTestContext();
const children: ChildProcess[] = [];
let a: string;
let b: string;
let envs = 0;

/**
 * Repeats `probe` until it answers `status`. Fails after 5 s: far inside the 60 s an entry is kept, so an answer
 * that changed by then was changed by the invalidation, not by the entry's age.
 */
async function untilAnswers(status: number, probe: () => Promise<{ status: number }>, limitMs = 5_000): Promise<void> {
  const start = performance.now();
  for (;;) {
    const res = await probe();
    if (res.status === status) return;
    const elapsed = performance.now() - start;
    if (elapsed > limitMs) throw new Error(`still ${res.status} after ${Math.round(elapsed)} ms`);
  }
}

/** The cache's listen connection in process B (and A): what B's database session looks like. */
const listenBackends = () =>
  t.deps.knex.raw(
    `SELECT pid FROM pg_stat_activity WHERE application_name = 'vc-credential-cache' AND datname = current_database()`,
  );

/** What B's /metrics says of its cache: listening (entries are kept) and listen connections lost so far. */
async function cacheOf(url: string): Promise<{ listening: boolean; losses: number }> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const value = (name: string) => {
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
    if (!m) throw new Error(`${url}/metrics has no ${name}`);
    return Number(m[1]);
  };
  return {
    listening: value('vc_credential_cache_listening') === 1,
    losses: value('vc_credential_cache_listen_losses_total'),
  };
}

/**
 * Runs `scenario`, which needs B to keep its entry throughout, until a run saw B's listen connection up from start
 * to end (at most 3 runs). A loss empties B's cache and sends its look-ups to the database until it listens again,
 * as it should; on a loaded machine a slow heartbeat counts as one. A "still cached" check in a run with a loss would
 * fail, and a "dropped" check would pass, for a reason other than the one tested: such a run is repeated. A run
 * without a loss is held to every assertion.
 */
async function withBListening(scenario: () => Promise<void>): Promise<void> {
  for (let run = 1; run <= 3; run++) {
    const deadline = Date.now() + 10_000;
    let before = await cacheOf(b);
    while (!before.listening) {
      if (Date.now() > deadline) throw new Error('process B does not listen');
      await new Promise((r) => setTimeout(r, 50));
      before = await cacheOf(b);
    }
    let failure: unknown;
    try {
      await scenario();
    } catch (err) {
      failure = err;
    }
    const lost = (await cacheOf(b)).losses !== before.losses;
    if (!lost && failure) throw failure;
    if (!lost) return;
    console.warn(`credential-cache test: process B lost its listen connection during run ${run}; running it again`);
  }
  throw new Error('process B lost its listen connection in each of 3 runs');
}

beforeAll(async () => {
  [a, b] = await Promise.all([spawnApi(t, children), spawnApi(t, children, { CREDENTIAL_CACHE_SECONDS: '60' })]);
  // Both processes listen before the tests start.
  const deadline = Date.now() + 20_000;
  while ((await listenBackends()).rows.length < 3) {
    if (Date.now() > deadline) throw new Error('the API processes do not listen');
    await new Promise((r) => setTimeout(r, 50));
  }
}, 90_000);
afterAll(() => stopChildren(children));

async function world(role: 'developer' | 'admin' = 'developer') {
  const owner = await createUser(t);
  const dev = await createUser(t);
  const team: Team = await createTeam(t, owner);
  const membership = await addMember(t, team, dev, role);
  const project = await createProject(t, team);
  const env = await Environment.query(t.deps.knex).insertAndFetch({
    team_id: team.id,
    project_id: project.id,
    name: `env-${envs + 1}`,
    git_ref: 'main',
    auto_deploy: false,
    port: t.config.environmentPorts.from + ++envs,
  });
  const token = await createAccessToken(t, dev, team);
  const tokenId = (await t.deps.knex('access_tokens').where({ user_id: dev.id }).first()).id as string;
  const ownerOn = async (url: string) => {
    const agent = await sessionAgent(t, owner);
    return Object.assign(new Agent(url), { cookies: agent.cookies, csrf: agent.csrf });
  };
  const devSession = async (url: string) => {
    const agent = await sessionAgent(t, dev);
    return Object.assign(new Agent(url), { cookies: agent.cookies, csrf: agent.csrf });
  };
  return {
    owner,
    dev,
    team,
    membership,
    env,
    token,
    tokenId,
    ownerOn,
    devSession,
    on: (url: string) => new Agent(url).withBearer(token),
  };
}

/** Revokes a token with the trigger off: no NOTIFY, so only a process that reads the database sees it. */
async function revokeSilently(tokenId: string): Promise<void> {
  await t.deps.knex.raw('ALTER TABLE access_tokens DISABLE TRIGGER access_tokens_notify_credentials');
  try {
    await t.deps.knex('access_tokens').where({ id: tokenId }).update({ revoked_at: new Date() });
  } finally {
    await t.deps.knex.raw('ALTER TABLE access_tokens ENABLE TRIGGER access_tokens_notify_credentials');
  }
}

describe('a token look-up cached by another API process', () => {
  it('is dropped when the token is revoked on one process: the other refuses it long before its cache would expire; last_used_at is still written', async () => {
    await withBListening(async () => {
      const w = await world();
      expect((await w.on(b).get('/me')).status).toBe(200);
      expect((await t.deps.knex('access_tokens').where({ id: w.tokenId }).first()).last_used_at).not.toBeNull();
      const revoked = await (await w.devSession(a)).delete(`/me/tokens/${w.tokenId}`);
      expect(revoked.status).toBe(200);
      await untilAnswers(401, () => w.on(b).get('/me'));
      expect((await w.on(b).get('/me')).body.error.message).toMatch(/revoked/);
    });
  });

  it('follows a role change made on one process: the other enforces the new role long before its cache would expire', async () => {
    await withBListening(async () => {
      const w = await world('developer');
      // A developer may deploy (this project has no repository, so the answer is 409 and nothing starts).
      expect((await w.on(b).post(`/environments/${w.env.id}/deploy`)).status).toBe(409);
      const changed = await (await w.ownerOn(a)).patch(`/memberships/${w.membership.id}`, { role: 'viewer' });
      expect(changed.status).toBe(200);
      await untilAnswers(403, () => w.on(b).post(`/environments/${w.env.id}/deploy`));
      // And back: the promotion is in force the same way.
      await (await w.ownerOn(a)).patch(`/memberships/${w.membership.id}`, { role: 'developer' });
      await untilAnswers(409, () => w.on(b).post(`/environments/${w.env.id}/deploy`));
    });
  });

  it('follows a removed membership: the token reaches nothing on the other process long before its cache would expire', async () => {
    await withBListening(async () => {
      const w = await world();
      expect((await w.on(b).get(`/environments/${w.env.id}`)).status).toBe(200);
      const removed = await (await w.ownerOn(a)).delete(`/memberships/${w.membership.id}`);
      expect(removed.status).toBe(204);
      await untilAnswers(403, () => w.on(b).get(`/environments/${w.env.id}`));
    });
  });

  it('is kept while nothing is notified (it is a cache), and dropped by the notification alone', async () => {
    await withBListening(async () => {
      const w = await world();
      expect((await w.on(b).get('/me')).status).toBe(200);
      await revokeSilently(w.tokenId);
      // Process A never looked this token up: it reads the database and refuses.
      expect((await w.on(a).get('/me')).status).toBe(401);
      // Process B still holds it: without the trigger's NOTIFY it would for up to a minute.
      expect((await w.on(b).get('/me')).status).toBe(200);
      await t.deps.knex.raw('SELECT pg_notify(?, ?)', [
        'vc_credentials',
        JSON.stringify({ table: 'access_tokens', id: w.tokenId }),
      ]);
      await untilAnswers(401, () => w.on(b).get('/me'));
    });
  });

  it('is bypassed once the listen connection is lost, until it is back', async () => {
    let w!: Awaited<ReturnType<typeof world>>;
    await withBListening(async () => {
      w = await world();
      expect((await w.on(b).get('/me')).status).toBe(200);
      await revokeSilently(w.tokenId);
      expect((await w.on(b).get('/me')).status).toBe(200);
    });
    const before = await cacheOf(b);
    // Every cache's listen connection is cut (as a database restart or a network fault would).
    await t.deps.knex.raw(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'vc-credential-cache' AND datname = current_database()`,
    );
    await untilAnswers(401, () => w.on(b).get('/me'));
    expect((await cacheOf(b)).losses).toBeGreaterThan(before.losses);
    // It listens again, and caches again.
    const deadline = Date.now() + 10_000;
    while ((await listenBackends()).rows.length < 3 || !(await cacheOf(b)).listening) {
      if (Date.now() > deadline) throw new Error('the caches did not listen again');
      await new Promise((r) => setTimeout(r, 50));
    }
    const next = await world();
    expect((await next.on(b).get('/me')).status).toBe(200);
    await (await next.devSession(a)).delete(`/me/tokens/${next.tokenId}`);
    await untilAnswers(401, () => next.on(b).get('/me'));
  });
});
