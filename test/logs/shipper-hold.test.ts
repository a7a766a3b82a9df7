/**
 * The shipper and a destination saved a moment ago (issue 18 item 5: a new user saves the destination and
 * requests the site at once): the lines of an environment without a destination are held for two refreshes,
 * so those made before the shipper reads the new destination are sent; older ones are forgotten, never
 * counted as dropped.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dayOf, machineFile } from '../../logs/machine-files';
import { LogShipper } from '../../logs/shipper';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { until } from '../helpers/until';

const t = useTestContext({ env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let receiver: Receiver;
let shipper: LogShipper;
let owner: Agent;
let team: Awaited<ReturnType<typeof createTeam>>;

const line = (envId: string, path: string, ageMs = 0) => ({
  time: new Date(Date.now() - ageMs).toISOString(),
  environment_id: envId,
  type: 'request',
  method: 'GET',
  path,
  status: 200,
  bytes: 2,
  duration_ms: 1,
  client_address: '127.0.0.1',
  user_agent: null,
});

async function newEnvironment() {
  const project = await createProject(t, team);
  return { project, env: await createEnvironment(t, project) };
}

beforeAll(async () => {
  const user = await createUser(t);
  team = await createTeam(t, user);
  owner = await sessionAgent(t, user);
  receiver = await startReceiver(0, '/ingest');
});

afterAll(async () => {
  await shipper?.close();
  await receiver?.stop();
});

describe('LogShipper and a destination saved a moment ago', () => {
  it('sends the lines made before it read the new destination', async () => {
    const { project, env } = await newEnvironment();
    // a refresh far away: the shipper knows the environment has no destination
    shipper = await new LogShipper({
      knex: t.deps.knex,
      secrets: t.deps.secrets,
      outbound: t.deps.config,
      dataDir: t.dataDir,
      source: 'requests',
      flushMs: 100,
      refreshMs: 60_000,
    }).start();
    shipper.push(line(env.id, '/made-before-the-shipper-knew'));
    await shipper.flush();
    expect(shipper.queued(env.id)).toEqual({ lines: 1, dropped: 0 });
    const saved = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'collector', url: receiver.url },
    });
    expect(saved.body.can_send).toBe(true);
    await shipper.refresh();
    const got = await receiver.waitFor(2); // the test send, then the line
    const lines = got.flatMap((r) =>
      r.body
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    );
    expect(lines.filter((l) => l.type === 'request').map((l) => l.path)).toEqual(['/made-before-the-shipper-knew']);
    expect(lines.some((l) => l.type === 'dropped')).toBe(false);
  });

  it('forgets the lines older than two refreshes when no destination came, without a dropped count', async () => {
    const { env } = await newEnvironment();
    await shipper.refresh();
    shipper.push(line(env.id, '/long-ago', 180_000));
    shipper.push(line(env.id, '/just-now'));
    await shipper.flush();
    expect(shipper.queued(env.id)).toEqual({ lines: 1, dropped: 0 });
    shipper.countDropped(env.id, 5); // no destination: nothing to count for
    await shipper.flush();
    expect(shipper.queued(env.id).dropped).toBe(0);
  });
});

/** Until a query of this database on `table` waits for a lock. */
const waitingFor = (table: string) =>
  until(
    `a read of ${table} to wait for its lock`,
    () =>
      t.deps.knex.raw(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE ?`,
        [`%"${table}"%`],
      ),
    (r) => r.rows[0].n > 0,
    { timeoutMs: 10_000 },
  );

/** A shipper that flushes and reads the destinations only when the test says (its lines' source: `race`). */
const quietShipper = () =>
  new LogShipper({
    knex: t.deps.knex,
    secrets: t.deps.secrets,
    outbound: t.deps.config,
    dataDir: t.dataDir,
    source: 'race',
    flushMs: 600_000,
    refreshMs: 600_000,
  }).start();

describe('LogShipper and an environment it learns while a flush runs', () => {
  it('never writes or sends its lines before it read its secret values', async () => {
    const racing = await quietShipper();
    // an environment made after the shipper's last read, with a secret value and a destination
    const { project, env } = await newEnvironment();
    const SECRET = 'sk_live_race_Q8w3Zr5vN2';
    const set = await owner.post(`/environments/${env.id}/variables`, {
      name: 'API_TOKEN',
      value: SECRET,
      secret: true,
    });
    expect(set.status, set.text).toBe(201);
    const saved = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'collector', url: receiver.url },
    });
    expect(saved.body.can_send).toBe(true);
    const before = receiver.received.length;
    racing.push(line(env.id, `/leak/${SECRET}`));

    // A read of the destinations under way (as the shipper's timer starts one) while a flush begins: the flush
    // does not know the environment yet, and learns it before it sends. Locks hold each read where it is.
    const settings = await t.deps.knex.transaction();
    const variables = await t.deps.knex.transaction();
    try {
      await settings.raw('LOCK TABLE project_log_settings IN ACCESS EXCLUSIVE MODE');
      await variables.raw('LOCK TABLE variables IN ACCESS EXCLUSIVE MODE');
      const refreshing = racing.refresh();
      await waitingFor('project_log_settings');
      const flushing = racing.flush();
      // the flush reads the environment's secret values before it writes or sends a line of it
      await waitingFor('variables');
      await settings.commit();
      await refreshing;
      await variables.commit();
      await flushing;
      const got = await receiver.waitFor(before + 1);
      const sent = got
        .slice(before)
        .flatMap((r) => r.body.split('\n').filter(Boolean))
        .map((l) => JSON.parse(l))
        .filter((l) => l.type === 'request');
      expect(sent.map((l) => l.path)).toEqual(['/leak/[secret]']);
      const file = readFileSync(machineFile(t.dataDir, env.id, 'race', dayOf(new Date())), 'utf8');
      expect(file).toContain('/leak/[secret]');
      expect(file).not.toContain(SECRET);
    } finally {
      await settings.rollback().catch(() => undefined);
      await variables.rollback().catch(() => undefined);
      await racing.close();
    }
  });

  it('keeps the lines of an environment that a read under way is to learn, and sends them once it is read', async () => {
    const racing = await quietShipper();
    const { project, env } = await newEnvironment();
    const saved = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'collector', url: receiver.url },
    });
    expect(saved.body.can_send).toBe(true);
    const before = receiver.received.length;
    racing.push(line(env.id, '/first-of-a-new-environment'));
    const settings = await t.deps.knex.transaction();
    try {
      await settings.raw('LOCK TABLE project_log_settings IN ACCESS EXCLUSIVE MODE');
      const refreshing = racing.refresh();
      await waitingFor('project_log_settings');
      await racing.flush(); // the environment is not known yet, but the read under way may know it
      expect(racing.queued(env.id)).toEqual({ lines: 1, dropped: 0 });
      await settings.commit();
      await refreshing;
      await racing.flush();
      const got = await receiver.waitFor(before + 1);
      const paths = got
        .slice(before)
        .flatMap((r) => r.body.split('\n').filter(Boolean))
        .map((l) => JSON.parse(l).path);
      expect(paths).toEqual(['/first-of-a-new-environment']);
    } finally {
      await settings.rollback().catch(() => undefined);
      await racing.close();
    }
  });
});
