/**
 * The edge's control plane when its reads of the state fail (the database cut off from its pool while its LISTEN
 * connection stays up): a change notified meanwhile is not dropped. The failed read is logged and tried again
 * every second, and the change is in force as soon as the database answers again, so the API's write still
 * answers 200 within its 10 s wait. Before, a failed read was swallowed and nothing tried again until the 30 s
 * refresh: the write answered 503 edge_unavailable, and its change waited that long.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdge } from '../../edge/server';
import type { Edge } from '../../edge/edge-options';
import { createKnex, SERVES_WITHOUT_DATABASE } from '../../db/knex';
import { useTestContext } from '../helpers/context';
import { createDeployWorld } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import { cuttableRelay } from '../helpers/cuttable-relay';
import { until } from '../helpers/until';

const t = useTestContext();
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let relay: Awaited<ReturnType<typeof cuttableRelay>>;
let knex: ReturnType<typeof createKnex>;
let edge: Edge;
const warned: string[] = [];

const visit = async (userAgent: string) =>
  (await fetch(`http://127.0.0.1:${w.environment.port}/`, { headers: { 'user-agent': userAgent } })).status;

beforeAll(async () => {
  w = await createDeployWorld(t);
  const db = new URL(t.config.databaseUrl!);
  relay = await cuttableRelay({ host: db.hostname, port: Number(db.port || 5432) });
  db.host = `127.0.0.1:${relay.port}`;
  // the state's reads go through the relay; the LISTEN connection straight to the database
  knex = createKnex(db.toString(), SERVES_WITHOUT_DATABASE);
  edge = await startEdge({
    knex,
    databaseUrl: t.config.databaseUrl!,
    host: '127.0.0.1',
    edgePort: 0,
    environmentPorts: t.config.environmentPorts,
    dataDir: `${t.dataDir}/edge-read-retry`,
    secrets: t.deps.secrets,
    logger: { warn: (_o, msg) => warned.push(msg ?? ''), info: () => undefined },
  });
}, 120_000);

afterAll(async () => {
  await edge?.close();
  await knex?.destroy();
  relay?.close();
});

describe("the edge's state read fails", () => {
  it("a change notified while the reads fail is applied once they answer again, within the write's wait", async () => {
    const owner = await sessionAgent(t, w.owner);
    expect(await visit('CutBot/1.0')).not.toBe(403);
    relay.cut();
    const write = owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: ['cutbot'] });
    await until('a failed read logged', () => warned.includes('the edge could not read the state to apply; retrying'), {
      timeoutMs: 9_000,
      intervalMs: 20,
    });
    relay.mend();
    const res = await write;
    expect(res.status, res.text).toBe(200);
    expect(await visit('CutBot/1.0')).toBe(403);
  }, 30_000);
});
