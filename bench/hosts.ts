/**
 * How the cost grows with hosts and environments (issue 26, `npm run bench -- hosts`), through the public
 * paths (the API, the task path deploys take, the provider's sandboxes, the edge's control plane and HAProxy):
 *  (a) ENVIRONMENTS (100; 5 with --quick) environments on one host, each created (POST
 *      /projects/{id}/environments: placement) and deployed (POST /environments/{id}/deploy: a build and a
 *      start in a real sandbox) one after the other, each timed from the creation's POST to its first 200
 *      through the edge (HAProxy). Then the memory each takes, by PSS (/proc smaps_rollup): the platform's
 *      (the sandbox's wrapper processes: bwrap and the shell under the tenant's uid; HAProxy's growth per
 *      environment; the in-process control plane's heap growth: supervisor, worker, edge control plane)
 *      against the app's own (its node process). Targets: platform memory at most 5 MB per environment; the
 *      last environment placed and started no slower than 1.5x the first.
 *  (b) placement with 10 hosts registered by the bench (heartbeating rows in `hosts`, no agents):
 *      bench/hosts/placement.ts.
 *  (c) the edge's apply time with 1,000 backends (SCALE_MAX slots each): bench/hosts/edge-apply.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median as p50, printTable, seedDeveloperWithToken, startBenchSystem } from './harness';
import { startWorker } from '../processes/worker-runtime';
import { startEdge } from '../edge/server';
import { registerHost } from '../core/host-registration';
import { tenantUid } from '../host/provider/sandbox';
import { removeCgroupBase, removeEnvironmentCgroups } from '../host/provider/cgroups';
import { createAppRepo } from '../test/helpers/deploy-fixtures';
import { Session } from '../db/models/session';
import { randomToken, sessionDigest } from '../api/lib/token-format';
import { allProcesses, heapAfterGc, type ProcessMemory, processTree, sum } from './hosts/memory';
import { benchPlacement } from './hosts/placement';
import { benchEdgeApply } from './hosts/edge-apply';
import { sized } from './quick';
import { freePortRange } from '../test/helpers/ports';

const ENVIRONMENTS = sized(100, 5);
const MB = 1024;
/** What a sandbox wraps the app in: everything else under the tenant's uid is the app. */
const WRAPPERS = new Set(['bwrap', 'nsenter', 'sh', 'dash']);

const pause = (n: number) => new Promise((r) => setTimeout(r, n));
const now = () => performance.now();
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

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

export async function run(): Promise<void> {
  console.log('[bench] hosts: starting a Temporal dev server, a database, the API, a worker and the edge...');
  // (a)'s environment ports, then (b)'s and (c)'s (1,000; 50 with --quick): below the kernel's ephemeral range
  // and free, as a port an outgoing connection holds is one the edge leaves out
  const A_PORTS = ENVIRONMENTS + 40;
  const { from: PORTS_A } = await freePortRange(A_PORTS + sized(1000, 50));
  const PORTS_C = PORTS_A + A_PORTS;
  const reposDir = mkdtempSync(path.join(os.tmpdir(), 'vc-bench-repos-'));
  const sys = await startBenchSystem('hosts', {
    ENVIRONMENT_PORTS: `${PORTS_A}-${PORTS_A + A_PORTS - 1}`,
    LOCAL_REPOSITORY_ROOTS: reposDir,
    // a host of its own: its sandboxes, cgroups and nft tables are named after it, apart from any test's
    HOST_NAME: `bench-hosts-${process.pid}`,
    HOST_CAPACITY: 'cpu=1000,memory_mb=10000000,disk_gb=1000000',
  });
  const { deps } = sys;
  const { knex } = deps;
  const host = await registerHost(knex, deps.config, {
    onLostName: () => console.error('[bench] hosts: the bench host lost its name'),
    onError: () => undefined,
    encryptionKeyId: deps.secrets.encryptionKey.id,
  });
  const edgeOptions = {
    knex,
    databaseUrl: deps.config.databaseUrl!,
    host: '127.0.0.1',
    edgePort: 0,
    environmentPorts: deps.config.environmentPorts,
    scaleMax: deps.config.scaleMax,
    dataDir: sys.dataDir,
    secrets: deps.secrets,
  };
  let edge: Awaited<ReturnType<typeof startEdge>> | null = await startEdge(edgeOptions);
  let worker: Awaited<ReturnType<typeof startWorker>> | null = await startWorker(deps, {
    hostName: deps.config.hostName,
  });
  const uids = new Set<number>();
  const envIds: string[] = [];
  const rows: Array<Record<string, string | number>> = [];
  try {
    const repo = createAppRepo(mkdtempSync(path.join(reposDir, 'repo-')));
    repo.commit('v1');
    const { user, team, project, token } = await seedDeveloperWithToken(sys, repo.dir);
    // creating environments is an admin's (the session's)
    await knex('memberships').where({ team_id: team.id, user_id: user.id }).update({ role: 'admin' });
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
    const post = async (p: string, body: unknown, headers: Record<string, string>, status: number) => {
      const res = await fetch(`${sys.apiUrl}${p}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const json = (await res.json()) as { id: string };
      if (res.status !== status) throw new Error(`POST ${p} answered ${res.status}: ${JSON.stringify(json)}`);
      return json.id;
    };
    const waitTask = async (id: string) => {
      const deadline = Date.now() + 180_000;
      for (;;) {
        const res = await fetch(`${sys.apiUrl}/tasks/${id}`, { headers: asToken });
        const task = (await res.json()) as { status: string; error: string | null };
        if (task.status === 'succeeded') return;
        if (['failed', 'cancelled'].includes(task.status)) throw new Error(`task ${id} ${task.status}: ${task.error}`);
        if (Date.now() > deadline) throw new Error(`task ${id} still ${task.status} after 180 s`);
        await pause(20);
      }
    };

    // ---- (a) ENVIRONMENTS environments on one host ---------------------------------------------------------
    const haproxyBefore = processTree(edge.haproxyPid()!);
    const heapBefore = heapAfterGc();
    console.log(`[bench] hosts: (a) ${ENVIRONMENTS} environments, each created, placed, built and started...`);
    const started: number[] = [];
    const placed: number[] = [];
    const ports: number[] = [];
    for (let i = 0; i < ENVIRONMENTS; i++) {
      const t0 = now();
      const envId = await post(
        `/projects/${project.id}/environments`,
        { name: `e${i}`, git_ref: 'main' },
        asSession,
        201,
      );
      placed.push(now() - t0);
      envIds.push(envId);
      const taskId = await post(`/environments/${envId}/deploy`, {}, asToken, 202);
      const { port } = await knex('environments').where({ id: envId }).first('port');
      ports.push(port);
      uids.add(tenantUid(port));
      for (;;) {
        if ((await read(`http://127.0.0.1:${port}/`))?.trim() === 'v1') break;
        if (now() - t0 > 180_000) throw new Error(`environment ${i} did not answer through the edge within 180 s`);
        await pause(10);
      }
      started.push(now() - t0);
      await waitTask(taskId);
      if ((i + 1) % 10 === 0 || i === ENVIRONMENTS - 1)
        console.log(`[bench] hosts: (a) ${i + 1} started (last: ${Math.round(started[i])} ms)`);
    }
    await pause(2000); // the old-stop and the edge's last applies settle
    const all = allProcesses();
    const byEnv = ports.map((port) => all.filter((p) => p.uid === tenantUid(port)));
    const empty = byEnv.filter((ps) => ps.length === 0).length;
    if (empty) console.log(`[bench] hosts: ${empty} environments have no process under their uid (sandbox mode?)`);
    const wrappers = byEnv.map((ps) => ps.filter((p) => WRAPPERS.has(p.comm)));
    const apps = byEnv.map((ps) => ps.filter((p) => !WRAPPERS.has(p.comm)));
    const perEnv = (groups: ProcessMemory[][], key: 'pssKb' | 'rssKb') =>
      groups.reduce((n, g) => n + sum(g, key), 0) / groups.length / MB;
    const haproxyAfter = processTree(edge.haproxyPid()!);
    // the edge's share: all of HAProxy divided among the environments (its backends exist for the whole range
    // from the start, so its growth with each environment's route is the smaller figure, printed too)
    const haproxyGrowth = (sum(haproxyAfter, 'pssKb') - sum(haproxyBefore, 'pssKb')) / ENVIRONMENTS / MB;
    const haproxyPerEnv = sum(haproxyAfter, 'pssKb') / ENVIRONMENTS / MB;
    const heapPerEnv = (heapAfterGc() - heapBefore) / ENVIRONMENTS / MB / MB;
    const wrapperPss = perEnv(wrappers, 'pssKb');
    const platform = wrapperPss + haproxyPerEnv + Math.max(0, heapPerEnv);
    const appPss = perEnv(apps, 'pssKb');
    const firstStart = started[0];
    const lastStart = started[started.length - 1];
    // a block of starts at each end: one start's time varies with the machine's load more than with the count
    const k = Math.max(1, Math.min(10, Math.floor(started.length / 4)));
    const blocks = Array.from({ length: Math.ceil(started.length / k) }, (_, b) =>
      Math.round(p50(started.slice(b * k, (b + 1) * k))),
    );
    const headP50 = p50(started.slice(0, k));
    const tailP50 = p50(started.slice(-k));
    const wrapperKinds = [...new Set(wrappers.flat().map((p) => p.comm))].join(', ');
    rows.push(
      {
        case: `(a) sandbox wrappers (${wrapperKinds}; ${round(wrappers.flat().length / ENVIRONMENTS)} a env), PSS`,
        value: `${round(wrapperPss, 2)} MB/env (RSS ${round(perEnv(wrappers, 'rssKb'), 1)})`,
        target: '',
        result: '',
      },
      {
        case: `(a) HAProxy's PSS over the environments (${round(sum(haproxyBefore, 'pssKb') / MB)} MB before, ${round(sum(haproxyAfter, 'pssKb') / MB)} after)`,
        value: `${round(haproxyPerEnv, 3)} MB/env (growth ${round(haproxyGrowth, 3)})`,
        target: '',
        result: '',
      },
      {
        case: '(a) control plane heap growth per environment (API, worker, supervisor, edge; after GC)',
        value: `${round(heapPerEnv, 3)} MB/env`,
        target: '',
        result: '',
      },
      {
        case: '(a) platform memory per environment (the three above)',
        value: `${round(platform, 2)} MB/env`,
        target: '<= 5 MB',
        result: platform <= 5 ? 'met' : 'NOT met',
      },
      {
        case: "(a) the app's own memory (its node process), PSS",
        value: `${round(appPss, 1)} MB/env (RSS ${round(perEnv(apps, 'rssKb'), 1)}); platform ${round(platform / appPss, 2)}x of it`,
        target: '',
        result: '',
      },
      {
        case: '(a) POST create: placement and the creation, p50',
        value: `${round(p50(placed))} ms`,
        target: '',
        result: '',
      },
      {
        case: `(a) create, deploy, first 200 via the edge: #1 vs #${ENVIRONMENTS}`,
        value: `${Math.round(firstStart)} vs ${Math.round(lastStart)} ms: ${round(lastStart / firstStart, 2)}x`,
        target: '<= 1.5x',
        result: lastStart / firstStart <= 1.5 ? 'met' : 'NOT met',
      },
      {
        case: `(a) same, p50 of the first ${k} vs the last ${k}`,
        value: `${Math.round(headP50)} vs ${Math.round(tailP50)} ms: ${round(tailP50 / headP50, 2)}x`,
        target: '<= 1.5x',
        result: tailP50 / headP50 <= 1.5 ? 'met' : 'NOT met',
      },
    );
    rows.push({ case: `(a) same, p50 of each ${k} in order`, value: blocks.join(' '), target: '', result: '' });
    printTable(`Many hosts (a): ${ENVIRONMENTS} environments on one host`, rows);

    // The environments' processes outlive a worker (the edge keeps serving them): stopped by their ids.
    await worker.shutdown();
    worker = null;
    await edge.close();
    edge = null;
    await stopTenants(uids, envIds);
    host.stop();

    // ---- (b) placement over 10 registered hosts; (c) the edge with 1,000 backends --------------------------
    await benchPlacement(sys, { team, project, asSession, portsFrom: PORTS_C, ownHost: deps.config.hostName });
    await benchEdgeApply(sys, { portsFrom: PORTS_C, edgeOptions });
  } finally {
    await worker?.shutdown().catch(() => undefined);
    await edge?.close().catch(() => undefined);
    await stopTenants(uids, envIds);
    host.stop();
    await sys.close();
    rmSync(reposDir, { recursive: true, force: true });
  }
}

/**
 * Kills every process running under the bench's tenants' uids (its environments' sandboxes), then takes their
 * cgroups away (the bench host's `vc-console-<HOST_NAME>` subtree).
 */
async function stopTenants(uids: Set<number>, envIds: string[]): Promise<void> {
  for (const p of allProcesses()) {
    if (!uids.has(p.uid)) continue;
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const id of envIds) await removeEnvironmentCgroups(id);
  removeCgroupBase();
}
