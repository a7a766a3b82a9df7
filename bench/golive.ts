/**
 * Going live without a build (issue 30), each case against a floor measured in the same run, in alternating
 * rounds (floor, redeploy, rollback, variables apply; again):
 *  - the floor: a bare spawn of the same app in the environment's sandbox (supervisor-web's spawnWeb, the
 *    release's directory), timed to its first 200 polled every 10 ms;
 *  - a redeploy with skip_steps of the live release, a rollback to the kept release before it, and a variables
 *    apply: from the POST to the first request served by the new process (its boot id, polled through the edge
 *    every 10 ms). Targets: p50 within 500 ms of the floor's p50, p95 within 1 s of it;
 *  - POST to `succeeded` (GET /tasks/{id} polled every 10 ms): p50 under 700 ms;
 *  - where the redeploy's time goes: the p50 of each phase (GET /tasks/{id} `phases`, from the one before).
 * BENCH_GOLIVE_ROUNDS sets the rounds (20; 1 with --quick). API, worker and edge (HAProxy) run in this process, on their own Temporal dev server and database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBenchSystem, percentile, printTable, seedDeveloperWithToken } from './harness';
import { startWorker } from '../processes/worker-runtime';
import { startEdge } from '../edge/server';
import { spawnWeb } from '../host/provider/supervisor-web';
import { releaseDirFor } from '../host/provider/releases';
import { createAppRepo } from '../test/helpers/deploy-fixtures';
import { Session } from '../db/models/session';
import { randomToken, sessionDigest } from '../api/lib/token-format';
import { sized } from './quick';
import { freePortRange } from '../test/helpers/ports';

const ROUNDS = Number(process.env.BENCH_GOLIVE_ROUNDS) || sized(20, 1);
const POLL_MS = 10;

const ms = (n: number) => Math.round(n);
const now = () => performance.now();
const pause = (n: number) => new Promise((r) => setTimeout(r, n));

/** GET `url`'s body, or null when nothing answers 200. */
async function read(url: string): Promise<string | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    const text = await res.text();
    return res.status === 200 ? text : null;
  } catch {
    return null;
  }
}

type Phase = { name: string; at: string };
type TaskView = { status: string; error: string | null; finished_at: string | null; phases: Phase[] };

export async function run(): Promise<void> {
  console.log('[bench] golive: starting a Temporal dev server, a database, the API, a worker and the edge...');
  // below the kernel's ephemeral range and free: a port an outgoing connection holds, the edge leaves out
  const portBase = (await freePortRange(10)).from;
  const reposDir = mkdtempSync(path.join(os.tmpdir(), 'vc-bench-repos-'));
  const sys = await startBenchSystem('golive', {
    ENVIRONMENT_PORTS: `${portBase}-${portBase + 9}`,
    LOCAL_REPOSITORY_ROOTS: reposDir,
  });
  const { deps } = sys;
  const { knex } = deps;
  const edge = await startEdge({
    knex,
    databaseUrl: deps.config.databaseUrl!,
    host: '127.0.0.1',
    edgePort: 0,
    environmentPorts: deps.config.environmentPorts,
    dataDir: sys.dataDir,
    secrets: deps.secrets,
  });
  const worker = await startWorker(deps);
  try {
    const repo = createAppRepo(mkdtempSync(path.join(reposDir, 'repo-')));
    repo.commit('v1');
    const { user, team, project, token } = await seedDeveloperWithToken(sys, repo.dir);
    const [env] = await knex('environments')
      .insert({ team_id: team.id, project_id: project.id, name: 'production', git_ref: 'main', port: portBase })
      .returning(['id', 'port']);
    // the variables apply takes a person signed in: a session of the developer
    const secret = randomToken();
    const session = await Session.query(knex).insertAndFetch({
      secret_digest: sessionDigest(secret),
      user_id: user.id,
      kind: 'browser',
      csrf_token: randomToken(),
      expires_at: new Date(Date.now() + 3600_000),
    });
    const asToken = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const asSession = {
      cookie: `vc_session=${secret}`,
      'x-csrf-token': session.csrf_token,
      'content-type': 'application/json',
    };
    const post = async (p: string, body: unknown = {}, headers: Record<string, string> = asToken) => {
      const res = await fetch(`${sys.apiUrl}${p}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const json = (await res.json()) as { id: string };
      if (res.status !== 202) throw new Error(`POST ${p} answered ${res.status}: ${JSON.stringify(json)}`);
      return json.id;
    };
    const getTask = async (id: string) =>
      (await (await fetch(`${sys.apiUrl}/tasks/${id}`, { headers: asToken })).json()) as TaskView;
    const waitTask = async (id: string, until: (t: TaskView) => boolean, what: string) => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const task = await getTask(id);
        if (until(task)) return task;
        if (['failed', 'cancelled'].includes(task.status)) throw new Error(`task ${id} ${task.status}: ${task.error}`);
        if (Date.now() > deadline) throw new Error(`task ${id}: no ${what} within 120 s`);
        await pause(POLL_MS);
      }
    };
    const boot = `http://127.0.0.1:${env.port}/boot`;

    console.log('[bench] golive: deploying v1, then v2 (two kept releases: a rollback has one to go back to)...');
    await waitTask(await post(`/environments/${env.id}/deploy`), (t) => t.status === 'succeeded', 'success');
    repo.commit('v2');
    const v2 = await post(`/environments/${env.id}/deploy`);
    await waitTask(v2, (t) => t.phases.some((p) => p.name === 'old_stopped'), 'old_stopped');

    /** POST, then the first request the new process serves through the edge, and the task's success. */
    const goLive = async (start: () => Promise<string>) => {
      let before = await read(boot);
      for (let i = 0; !before && i < 50; i++) {
        await pause(100);
        before = await read(boot);
      }
      if (!before) throw new Error(`nothing answers 200 at ${boot} (through the edge) for 5 s before the change`);
      const t0 = now();
      const id = await start();
      let served = 0;
      const servedBy = (async () => {
        for (;;) {
          const answer = await read(boot);
          if (answer && answer !== before) return (served = now() - t0);
          if (now() - t0 > 60_000) throw new Error('no new process served within 60 s');
          await pause(POLL_MS);
        }
      })();
      const done = await waitTask(id, (t) => t.status === 'succeeded', 'success');
      const succeeded = now() - t0;
      await servedBy;
      // the old process gone before the next round
      const ended = await waitTask(id, (t) => t.phases.some((p) => p.name === 'old_stopped'), 'old_stopped');
      return { served, succeeded, phases: ended.phases, done };
    };

    /** A bare spawn of the same app in the environment's sandbox, to its first 200. */
    const floor = async () => {
      const live = await knex('environments').where({ id: env.id }).first('live_release_id');
      const route = await knex('edge_routes').where({ environment_id: env.id }).first('upstreams');
      const taken = ((route?.upstreams ?? []) as { port: number }[]).map((u) => u.port);
      const t0 = now();
      const web = await spawnWeb({
        dataDir: sys.dataDir,
        envId: env.id,
        port: env.port,
        releaseId: live.live_release_id,
        releaseDir: releaseDirFor(sys.dataDir, env.id, live.live_release_id),
        command: 'node server.js',
        env: {},
        slot: 9,
        backoff: { initialMs: 500, maxMs: 30_000, stableMs: 30_000 },
        taken,
        onPid: () => undefined,
      });
      try {
        for (;;) {
          if (await read(`http://${web.host}:${web.port}/`)) return now() - t0;
          if (now() - t0 > 30_000) throw new Error('the bare spawn did not answer within 30 s');
          await pause(POLL_MS);
        }
      } finally {
        await web.stop(2000);
      }
    };

    const times = {
      floor: [] as number[],
      redeploy: [] as number[],
      rollback: [] as number[],
      apply: [] as number[],
      succeeded: { redeploy: [] as number[], rollback: [] as number[], apply: [] as number[] },
    };
    const phaseTimes = new Map<string, number[]>();
    console.log(`[bench] golive: ${ROUNDS} rounds of floor, redeploy (skip_steps), rollback, variables apply...`);
    for (let round = 0; round < ROUNDS; round++) {
      times.floor.push(await floor());
      const cases = {
        redeploy: () => post(`/environments/${env.id}/redeploy`, { skip_steps: true }),
        rollback: () => post(`/environments/${env.id}/rollback`),
        apply: () => post(`/environments/${env.id}/variables/apply`, undefined, asSession),
      };
      for (const [name, start] of Object.entries(cases) as [keyof typeof cases, () => Promise<string>][]) {
        const r = await goLive(start);
        times[name].push(r.served);
        times.succeeded[name].push(r.succeeded);
        if (name === 'redeploy') {
          const at = r.phases.map((p) => Date.parse(p.at));
          for (let i = 1; i < r.phases.length; i++) {
            const key = `${r.phases[i - 1].name} -> ${r.phases[i].name}`;
            phaseTimes.set(key, [...(phaseTimes.get(key) ?? []), at[i] - at[i - 1]]);
          }
        }
      }
    }

    const floorP50 = percentile(times.floor, 0.5);
    const rows: Array<Record<string, string | number>> = [
      {
        case: 'floor: bare spawn in the sandbox to first 200',
        n: times.floor.length,
        'p50 ms': ms(floorP50),
        'p95 ms': ms(percentile(times.floor, 0.95)),
        target: '',
        result: '',
      },
    ];
    const labels = { redeploy: 'redeploy skip_steps', rollback: 'rollback', apply: 'variables apply' } as const;
    for (const name of ['redeploy', 'rollback', 'apply'] as const) {
      const p50 = percentile(times[name], 0.5);
      const p95 = percentile(times[name], 0.95);
      const met = p50 - floorP50 <= 500 && p95 - floorP50 <= 1000;
      rows.push({
        case: `${labels[name]}: POST to first request served by the new process`,
        n: times[name].length,
        'p50 ms': ms(p50),
        'p95 ms': ms(p95),
        target: 'p50 <= floor+500, p95 <= floor+1000',
        result: `${met ? 'met' : 'NOT met'} (floor +${ms(p50 - floorP50)} / +${ms(p95 - floorP50)})`,
      });
    }
    for (const name of ['redeploy', 'rollback', 'apply'] as const) {
      const p50 = percentile(times.succeeded[name], 0.5);
      rows.push({
        case: `${labels[name]}: POST to succeeded`,
        n: times.succeeded[name].length,
        'p50 ms': ms(p50),
        'p95 ms': ms(percentile(times.succeeded[name], 0.95)),
        target: 'p50 < 700',
        result: p50 < 700 ? 'met' : 'NOT met',
      });
    }
    for (const [key, values] of phaseTimes) {
      rows.push({
        case: `  redeploy phase ${key}`,
        n: values.length,
        'p50 ms': ms(percentile(values, 0.5)),
        'p95 ms': ms(percentile(values, 0.95)),
        target: '',
        result: '',
      });
    }
    printTable('Going live without a build (alternating rounds against the floor)', rows);
  } finally {
    await worker.shutdown().catch(() => undefined);
    await edge.close().catch(() => undefined);
    await sys.close();
    rmSync(reposDir, { recursive: true, force: true });
  }
}
