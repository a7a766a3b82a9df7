/**
 * Deploys and the task list, each against a baseline measured in the same run:
 *  (a) POST /environments/{id}/deploy latency (30 deploys on 30 environments, a token) against a bare
 *      client.workflow.start of the same workflow, with the same options, on the same Temporal server.
 *      Target (issue 30): p50 ratio <= 1.3. Measured with no worker polling, so both sides time the start alone.
 *      The POST is sent two ways: with fetch (undici), as the `service` client and most scripts do, and with
 *      node:http on a kept-alive connection, whose own cost is a fraction of fetch's (~0.15 against ~1 ms a
 *      request here): the second is the API's share without the client's.
 *      BENCH_DEPLOYS_STARTS_ONLY=1 runs (a) alone; BENCH_DEPLOYS sets its rounds (30).
 *  (b) A no-op deploy end to end (skip_steps, the commit's release already built): POST to `succeeded`
 *      seen by polling GET /tasks/{id} every 20 ms. Target: p50 under 1.5 s.
 *  (c) GET /tasks?limit=100 on a table of 1,000,000 tasks (bulk insert with generate_series, timed):
 *      p50 over 200 sequential requests against the same SQL through a bare pg query. Target: p50 under 20 ms.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import { startBenchSystem, percentile, printTable, seedDeveloperWithToken, spawnApiProcess } from './harness';
import { startWorker } from '../processes/worker-runtime';
import { searchAttributeKeys } from '../core/temporal-starts';
import { createAppRepo } from '../test/helpers/deploy-fixtures';
import type { DeployWorkflowInput } from '../workflows/deploys-shared';
import { sized } from './quick';
import { freePortRange } from '../test/helpers/ports';

const DEPLOYS = Number(process.env.BENCH_DEPLOYS) || sized(30, 2);
const NOOP_DEPLOYS = sized(10, 1);
const TASK_ROWS = sized(1_000_000, 2_000);
const LIST_REQUESTS = sized(200, 10);
const STARTS_ONLY = process.env.BENCH_DEPLOYS_STARTS_ONLY === '1';

const ms = (n: number) => Math.round(n * 10) / 10;
const since = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

export async function run(): Promise<void> {
  console.log('[bench] deploys: starting a Temporal dev server, a database and the API...');
  const portBase = (await freePortRange(4 * DEPLOYS + 1)).from;
  // The repository lives outside DATA_DIR, under a directory listed in LOCAL_REPOSITORY_ROOTS.
  const reposDir = mkdtempSync(path.join(os.tmpdir(), 'vc-bench-repos-'));
  const sys = await startBenchSystem('deploys', {
    ENVIRONMENT_PORTS: `${portBase}-${portBase + 4 * DEPLOYS}`,
    LOCAL_REPOSITORY_ROOTS: reposDir,
  });
  const { deps } = sys;
  const { knex } = deps;
  let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
  const rows: Array<Record<string, string | number>> = [];
  try {
    // The world: a developer's token in a team whose project is connected to a real git repository.
    const repo = createAppRepo(mkdtempSync(path.join(reposDir, 'repo-')));
    repo.commit('v1');
    const { user, team, project, token } = await seedDeveloperWithToken(sys, repo.dir);
    const envs = await knex('environments')
      .insert(
        Array.from({ length: 4 * DEPLOYS + 1 }, (_, i) => ({
          team_id: team.id,
          project_id: project.id,
          name: `env-${i}`,
          git_ref: 'main',
          port: portBase + i,
        })),
      )
      .returning(['id', 'name', 'git_ref', 'port']);
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const post = async (p: string, body: unknown = {}, apiUrl = sys.apiUrl) => {
      const res = await fetch(`${apiUrl}${p}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      const json = (await res.json()) as { id: string };
      if (res.status !== 202) throw new Error(`POST ${p} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    };

    // ---- (a) POST deploy against a bare workflow start ----------------------------------------------
    console.log(
      `[bench] deploys: (a) ${DEPLOYS} POST /environments/{id}/deploy against ${DEPLOYS} bare workflow starts...`,
    );
    const bareStart = async (i: number) => {
      const taskId = randomUUID();
      const env = envs[i];
      const workflowId = `bench-bare-${i}-${taskId}`;
      const input: DeployWorkflowInput = {
        task: {
          id: taskId,
          team_id: team.id,
          project_id: project.id,
          environment_id: env.id,
          kind: 'deployments',
          type: 'deploy',
          account_user_id: user.id,
          account_via: 'token',
          workflow_id: workflowId,
          params: { git_ref: 'main', skip_steps: false },
          created_at: new Date().toISOString(),
        },
        environment: { id: env.id, name: env.name, git_ref: env.git_ref },
        project: { id: project.id, name: project.name },
        skipSteps: false,
        stepTimeoutSeconds: deps.config.stepTimeoutSeconds,
      };
      const k = searchAttributeKeys;
      const started = process.hrtime.bigint();
      await deps.temporal.workflow.start('deployEnvironment', {
        taskQueue: deps.config.taskQueue,
        workflowId,
        args: [input],
        staticSummary: `deploy main to ${env.name} (bench)`,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        typedSearchAttributes: [
          { key: k.TeamId, value: team.id },
          { key: k.ProjectId, value: project.id },
          { key: k.EnvironmentId, value: env.id },
          { key: k.TaskKind, value: 'deployments' },
          { key: k.TaskType, value: 'deploy' },
          { key: k.TaskId, value: taskId },
        ],
      });
      return { ms: since(started), workflowId };
    };
    const apiStart = async (i: number, apiUrl = sys.apiUrl) => {
      const started = process.hrtime.bigint();
      const task = await post(`/environments/${envs[i].id}/deploy`, {}, apiUrl);
      return { ms: since(started), workflowId: `env-change-${envs[i].id}`, taskId: task.id };
    };
    // The same POST with node:http on a kept-alive connection (the client's own cost left out, see the header).
    const keptAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const postKeptAlive = (url: string, body: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = http.request(url, { method: 'POST', agent: keptAlive, headers: auth }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    const apiStartHttp = async (i: number, apiUrl: string) => {
      const started = process.hrtime.bigint();
      const res = await postKeptAlive(`${apiUrl}/environments/${envs[i].id}/deploy`, '{}');
      const ms = since(started);
      if (res.status !== 202) throw new Error(`POST deploy answered ${res.status}: ${res.text}`);
      return { ms, workflowId: `env-change-${envs[i].id}` };
    };
    // The API also as its own process, as in production (the in-process API shares this event loop
    // with the load generator and the bare client).
    const apiProcess = await spawnApiProcess(sys);
    // Warm-up (connections, JIT), on the spare environment; its workflows are terminated like the others.
    const toTerminate: string[] = [];
    for (let i = 0; i < 3; i++) toTerminate.push((await bareStart(4 * DEPLOYS)).workflowId);
    for (const url of [sys.apiUrl, apiProcess.apiUrl]) {
      await apiStart(4 * DEPLOYS, url);
      await deps.temporal.workflow.getHandle(`env-change-${envs[4 * DEPLOYS].id}`).terminate('bench warm-up');
      await apiStartHttp(4 * DEPLOYS, url);
      await deps.temporal.workflow.getHandle(`env-change-${envs[4 * DEPLOYS].id}`).terminate('bench warm-up');
    }
    const times = {
      bare: [] as number[],
      api: [] as number[],
      apiProcess: [] as number[],
      apiHttp: [] as number[],
      apiProcessHttp: [] as number[],
    };
    // Rotate which goes first: a start leaves the server busy for a moment (history, visibility),
    // which would otherwise always fall on the same one.
    const kinds = ['bare', 'api', 'apiProcess', 'apiHttp', 'apiProcessHttp'] as const;
    for (let i = 0; i < DEPLOYS; i++) {
      for (let j = 0; j < kinds.length; j++) {
        const which = kinds[(i + j) % kinds.length];
        const r =
          which === 'bare'
            ? await bareStart(i)
            : which === 'api'
              ? await apiStart(i)
              : which === 'apiProcess'
                ? await apiStart(DEPLOYS + i, apiProcess.apiUrl)
                : which === 'apiHttp'
                  ? await apiStartHttp(2 * DEPLOYS + i, sys.apiUrl)
                  : await apiStartHttp(3 * DEPLOYS + i, apiProcess.apiUrl);
        times[which].push(r.ms);
        toTerminate.push(r.workflowId);
      }
    }
    await apiProcess.stop();
    keptAlive.destroy();
    await Promise.all(
      toTerminate.map((id) =>
        deps.temporal.workflow
          .getHandle(id)
          .terminate('bench: start latency only')
          .catch(() => undefined),
      ),
    );
    // Their tasks would otherwise stay pending (and count as deploys in progress).
    await knex('tasks')
      .whereIn('status', ['pending', 'running'])
      .update({ status: 'cancelled', finished_at: knex.fn.now(), error: 'terminated by the bench' });
    const bareP50 = percentile(times.bare, 0.5);
    const ratioOf = (xs: number[]) => percentile(xs, 0.5) / bareP50;
    const verdict = (r: number) => `${r.toFixed(2)}x ${r <= 1.3 ? 'met' : 'NOT met'}`;
    const postRow = (label: string, xs: number[]) => ({
      case: `(a) ${label}`,
      n: DEPLOYS,
      'p50 ms': ms(percentile(xs, 0.5)),
      'p99 ms': ms(percentile(xs, 0.99)),
      target: 'p50 <= 1.3x bare',
      result: verdict(ratioOf(xs)),
    });
    rows.push(
      { ...postRow('bare client.workflow.start', times.bare), target: '', result: '' },
      postRow('POST deploy, API in this process', times.api),
      postRow('POST deploy, API as its own process', times.apiProcess),
      postRow('the same, node:http kept alive, API in this process', times.apiHttp),
      postRow('the same, node:http kept alive, API as its own process', times.apiProcessHttp),
    );

    if (STARTS_ONLY) {
      printTable('Deploys: the POST against a bare workflow start', rows);
      return;
    }
    // ---- (b) a no-op deploy end to end ------------------------------------------------------------
    console.log(
      '[bench] deploys: (b) starting a worker (bundles the workflows) and deploying once to build the release...',
    );
    worker = await startWorker(deps);
    const env = envs[4 * DEPLOYS]; // the spare: only warmed up above
    const waitDone = async (taskId: string, deadlineMs: number) => {
      const deadline = Date.now() + deadlineMs;
      for (;;) {
        const res = await fetch(`${sys.apiUrl}/tasks/${taskId}`, { headers: auth });
        const task = (await res.json()) as { status: string; error: string | null };
        if (['succeeded', 'failed', 'cancelled'].includes(task.status)) return task;
        if (Date.now() > deadline) throw new Error(`task ${taskId} still ${task.status}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const first = await waitDone((await post(`/environments/${env.id}/deploy`)).id, 120_000);
    if (first.status !== 'succeeded') throw new Error(`the first deploy ${first.status}: ${first.error}`);
    console.log(`[bench] deploys: (b) ${NOOP_DEPLOYS} deploys with skip_steps of the built commit...`);
    const noop: number[] = [];
    for (let i = 0; i < NOOP_DEPLOYS; i++) {
      const started = process.hrtime.bigint();
      const task = await waitDone((await post(`/environments/${env.id}/deploy`, { skip_steps: true })).id, 30_000);
      if (task.status !== 'succeeded') throw new Error(`no-op deploy ${task.status}: ${task.error}`);
      noop.push(since(started));
    }
    await worker.shutdown();
    worker = undefined;
    const noopP50 = percentile(noop, 0.5);
    rows.push({
      case: '(b) no-op deploy, POST to succeeded',
      n: NOOP_DEPLOYS,
      'p50 ms': ms(noopP50),
      'p99 ms': ms(percentile(noop, 0.99)),
      target: 'p50 < 1500 ms',
      result: noopP50 < 1500 ? 'met' : 'NOT met',
    });

    // ---- (c) GET /tasks on a million tasks --------------------------------------------------------
    console.log(`[bench] deploys: (c) inserting ${TASK_ROWS.toLocaleString('en')} tasks with generate_series...`);
    const others = await knex('teams')
      .insert(Array.from({ length: 9 }, (_, i) => ({ name: `Other ${i}`, settings: {} })))
      .returning('id');
    const teamIds = [team.id, ...others.map((o: { id: string }) => o.id)];
    const envIds = envs.map((e) => e.id);
    const insertStarted = process.hrtime.bigint();
    // 90% in the bench team (spread over its environments, kinds and statuses), the rest in nine other teams.
    await knex.raw(
      `INSERT INTO tasks (team_id, project_id, environment_id, kind, type, status, account_user_id, account_via, workflow_id, created_at, started_at, finished_at)
       SELECT CASE WHEN g % 10 = 0 THEN (?::uuid[])[2 + g % 9] ELSE ?::uuid END,
              CASE WHEN g % 10 = 0 THEN NULL ELSE ?::uuid END,
              CASE WHEN g % 10 = 0 THEN NULL ELSE (?::uuid[])[1 + g % ?] END,
              (ARRAY['deployments','backups','machines','configuration','maintenance'])[1 + g % 5],
              (ARRAY['deploy','build','redeploy','backup','resize','rollback'])[1 + g % 6],
              (ARRAY['succeeded','failed','cancelled'])[1 + g % 3],
              ?::uuid, 'token', 'bench-' || g,
              now() - make_interval(secs => (? - g)), now() - make_interval(secs => (? - g)), now() - make_interval(secs => (? - g))
       FROM generate_series(1, ?) AS g`,
      [
        `{${teamIds.join(',')}}`,
        team.id,
        project.id,
        `{${envIds.join(',')}}`,
        envIds.length,
        user.id,
        TASK_ROWS,
        TASK_ROWS,
        TASK_ROWS,
        TASK_ROWS,
      ],
    );
    await knex.raw('ANALYZE tasks');
    const insertMs = since(insertStarted);
    console.log(
      `[bench] deploys: (c) inserted in ${(insertMs / 1000).toFixed(1)} s; ${LIST_REQUESTS} requests each...`,
    );

    const bare = new pg.Pool({ connectionString: deps.config.databaseUrl, max: 2 });
    const sql =
      'SELECT tasks.*, users.name AS account_name FROM tasks LEFT JOIN users ON users.id = tasks.account_user_id ' +
      'WHERE tasks.team_id = $1 ORDER BY tasks.seq DESC LIMIT 101';
    const listUrl = `${sys.apiUrl}/tasks?limit=100`;
    const check = await fetch(listUrl, { headers: auth });
    const page = (await check.json()) as { data: unknown[]; next_before: string | null };
    if (check.status !== 200 || page.data.length !== 100 || !page.next_before)
      throw new Error(`GET /tasks answered ${check.status} with ${page.data?.length} rows`);
    for (let i = 0; i < 20; i++) {
      await bare.query(sql, [team.id]);
      await (await fetch(listUrl, { headers: auth })).arrayBuffer();
    }
    const bareList: number[] = [];
    const apiList: number[] = [];
    const deepUrl = `${listUrl}&before=${page.next_before}`;
    const apiDeep: number[] = [];
    for (let i = 0; i < LIST_REQUESTS; i++) {
      let started = process.hrtime.bigint();
      await bare.query(sql, [team.id]);
      bareList.push(since(started));
      started = process.hrtime.bigint();
      const res = await fetch(i % 2 ? deepUrl : listUrl, { headers: auth });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET /tasks answered ${res.status}`);
      (i % 2 ? apiDeep : apiList).push(since(started));
    }
    await bare.end();
    const listP50 = percentile([...apiList, ...apiDeep], 0.5);
    const listRatio = listP50 / percentile(bareList, 0.5);
    rows.push(
      {
        case: `(c) bare pg: same SQL, ${TASK_ROWS / 1e6}M tasks`,
        n: LIST_REQUESTS,
        'p50 ms': ms(percentile(bareList, 0.5)),
        'p99 ms': ms(percentile(bareList, 0.99)),
        target: '',
        result: '',
      },
      {
        case: '(c) GET /tasks?limit=100 (token)',
        n: LIST_REQUESTS,
        'p50 ms': ms(listP50),
        'p99 ms': ms(percentile([...apiList, ...apiDeep], 0.99)),
        target: 'p50 < 20 ms',
        result: `${listP50 < 20 ? 'met' : 'NOT met'}; ${listRatio.toFixed(1)}x bare`,
      },
      {
        case: '    first page / page 2 (before=)',
        n: `${apiList.length}/${apiDeep.length}`,
        'p50 ms': `${ms(percentile(apiList, 0.5))} / ${ms(percentile(apiDeep, 0.5))}`,
        'p99 ms': '',
        target: '',
        result: '',
      },
      {
        case: `(c) insert ${TASK_ROWS.toLocaleString('en')} tasks (generate_series)`,
        n: 1,
        'p50 ms': Math.round(insertMs),
        'p99 ms': '',
        target: '',
        result: '',
      },
    );
    printTable('Deploys and the task list', rows);
  } finally {
    await worker?.shutdown().catch(() => undefined);
    await sys.close();
    rmSync(reposDir, { recursive: true, force: true });
  }
}
