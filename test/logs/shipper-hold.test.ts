/**
 * The shipper and a destination saved a moment ago (issue 18 item 5: a new user saves the destination and
 * requests the site at once): the lines of an environment without a destination are held for two refreshes,
 * so those made before the shipper reads the new destination are sent; older ones are forgotten, never
 * counted as dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogShipper } from '../../logs/shipper';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { startReceiver, type Receiver } from '../helpers/receiver';

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
