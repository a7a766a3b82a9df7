/**
 * Placement with 10 hosts (issue 26, `npm run bench -- hosts` (b)): ten rows in `hosts` registered and kept
 * heartbeating by the bench as agents do (no agents: nothing runs on them), of equal capacity. The bench's own
 * host is drained for the while so that only these take new servers. Then:
 *  - PLACEMENTS (1,000; 50 with --quick) placements through core/placement.ts, each in the transaction that
 *    inserts its web server (as an environment's creation does), timed one by one;
 *  - API_CREATES (20; 3 with --quick) environments created through POST /projects/{id}/environments;
 *  - the spread: web servers per host afterwards (equal hosts: each within one of the others).
 */
import { randomBytes } from 'node:crypto';
import { percentile as pct, printTable, type BenchSystem } from '../harness';
import { placeWebServer } from '../../core/placement';
import { loadPriceList, planById } from '../../core/pricing';
import { claimHost, hostHeartbeat, listHosts } from '../../db/queries/hosts';
import { Server } from '../../db/models/server';
import { sized } from '../quick';

const HOSTS = 10;
const PLACEMENTS = sized(1000, 50);
const API_CREATES = sized(20, 3);
const HOST_MEMORY_MB = 65_536;

const now = () => performance.now();
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

export async function benchPlacement(
  sys: BenchSystem,
  o: {
    team: { id: string };
    project: { id: string };
    asSession: Record<string, string>;
    /** Ports for the environments placed here (the edge bench serves them next). */
    portsFrom: number;
    /** The bench's own host: drained while these are placed. */
    ownHost: string;
  },
): Promise<void> {
  const { deps } = sys;
  const { knex } = deps;
  const lostSeconds = deps.config.hostLostSeconds;
  const list = loadPriceList(deps.config);
  const plan = planById(list, list.default_plan)!;
  const settings = { hostLostSeconds: lostSeconds, plans: list.plans };
  console.log(`[bench] hosts: (b) ${HOSTS} hosts registered, ${PLACEMENTS} placements, ${API_CREATES} creations...`);
  await knex('hosts').where({ name: o.ownHost }).update({ status: 'drained' });
  const names = Array.from({ length: HOSTS }, (_, i) => `bench-place-${i}`);
  const tokens = names.map(() => randomBytes(16).toString('hex'));
  for (const [i, name] of names.entries()) {
    const claim = await claimHost(
      knex,
      {
        name,
        address: `127.0.17.${i + 2}`,
        capacity: { cpu: 8, memory_mb: HOST_MEMORY_MB, disk_gb: 500 },
        storageRoots: [],
        instancePorts: { from: 40000, to: 40999 },
        token: tokens[i],
      },
      lostSeconds,
    );
    if (!claim.claimed) throw new Error(`host ${name} is held by another agent`);
  }
  // heartbeats, as agents send them: a third of HOST_LOST_SECONDS at most
  const beat = setInterval(
    () => void Promise.all(names.map((n, i) => hostHeartbeat(knex, n, tokens[i]))).catch(() => undefined),
    Math.min(5000, (lostSeconds * 1000) / 3),
  );
  try {
    const envs: Array<{ id: string; name: string }> = await knex('environments')
      .insert(
        Array.from({ length: PLACEMENTS }, (_, i) => ({
          team_id: o.team.id,
          project_id: o.project.id,
          name: `p${i}`,
          git_ref: 'main',
          port: o.portsFrom + i,
        })),
      )
      .returning(['id', 'name']);
    const times: number[] = [];
    for (const env of envs) {
      const t0 = now();
      await knex.transaction(async (trx) => {
        const host = await placeWebServer(trx, settings, plan);
        await Server.query(trx).insert({
          team_id: o.team.id,
          project_id: o.project.id,
          environment_id: env.id,
          role: 'web',
          name: `${env.name}-web`,
          plan: plan.id,
          cpu: plan.cpu,
          memory_mb: plan.memory_mb,
          disk_gb: plan.disk_gb,
          host,
        } as Partial<Server>);
      });
      times.push(now() - t0);
    }
    const creates: number[] = [];
    for (let i = 0; i < API_CREATES; i++) {
      const t0 = now();
      const res = await fetch(`${sys.apiUrl}/projects/${o.project.id}/environments`, {
        method: 'POST',
        headers: o.asSession,
        body: JSON.stringify({ name: `placed-${i}`, git_ref: 'main' }),
      });
      if (res.status !== 201) throw new Error(`POST environments answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
      creates.push(now() - t0);
    }
    const hosts = (await listHosts(knex, lostSeconds)).filter((h) => names.includes(h.name));
    const counts = hosts.map((h) => h.environments);
    const min = Math.min(...counts);
    const max = Math.max(...counts);
    const used = hosts.filter((h) => h.environments > 0).length;
    const spreads = used === HOSTS && max - min <= 1;
    printTable(`Many hosts (b): placement over ${HOSTS} registered hosts of ${HOST_MEMORY_MB} MB`, [
      {
        case: '(b) core/placement.ts placeWebServer + the server insert, one transaction',
        n: times.length,
        'p50 ms': round(pct(times, 0.5), 2),
        'p99 ms': round(pct(times, 0.99), 2),
        result: '',
      },
      {
        case: '(b) POST /projects/{id}/environments (placement inside)',
        n: creates.length,
        'p50 ms': round(pct(creates, 0.5), 1),
        'p99 ms': round(pct(creates, 0.99), 1),
        result: '',
      },
      {
        case: `(b) web servers per host (${hosts.map((h) => h.environments).join(' ')})`,
        n: counts.reduce((a, b) => a + b, 0),
        'p50 ms': '',
        'p99 ms': '',
        result: `${used}/${HOSTS} hosts used, ${min}-${max} each: ${spreads ? 'spreads' : 'does NOT spread'}`,
      },
    ]);
  } finally {
    clearInterval(beat);
    await knex('hosts').where({ name: o.ownHost }).update({ status: 'ready' });
  }
}
