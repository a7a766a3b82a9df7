import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, beforeAll } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { until } from '../../helpers/until';
import { startReceiver } from '../../helpers/receiver';
import { sessionAgent } from '../../helpers/fixtures';
import {
  commitAll,
  commitWebApp,
  createDeployWorld,
  EXITS_AFTER_A_MOMENT,
  fetchEnvironment,
  taskLog,
  waitForTask,
} from '../../helpers/deploy-fixtures';
import { cliHome, runCli } from '../../helpers/cli';
import { deployChoicesSchema, releasePageSchema } from '../../../api/pipeline/schemas';

// the Slack integration's receiver of the crash test is on loopback
const t = useTestContext({ worker: true, smtp: true, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
const url = () => `/environments/${w.environment.id}`;

beforeAll(async () => {
  w = await createDeployWorld(t);
  writeFileSync(w.repo.gate, '');
});

async function run(path: string, body?: unknown) {
  const res = await w.api.post(path, body);
  expect(res.status, res.text).toBe(202);
  return waitForTask(t, w.api, res.body.id);
}

describe('POST /environments/{id}/deploy', () => {
  it('builds the head of the git ref, runs the deploy steps and puts v1 live on the environment port', async () => {
    const res = await w.api.post(`${url()}/deploy`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({
      kind: 'deployments',
      type: 'deploy',
      environment_id: w.environment.id,
      account: { id: w.developer.id, via: 'token' },
    });
    expect(['pending', 'running', 'succeeded']).toContain(res.body.status);
    const task = await waitForTask(t, w.api, res.body.id);
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(task.result).toMatchObject({
      git_ref: 'main',
      release_id: expect.any(String),
      deployment_id: expect.any(String),
    });
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
    expect(w.repo.deployRuns()).toBe(1);
    const log = await taskLog(t, w.api, task.id);
    expect(log).toMatch(/==> Building main@[0-9a-f]{7}/);
    expect(log).toContain('$ echo built > BUILT');
    expect(log).toMatch(/==> Live: release /);
  });

  it('deploys a new commit: v2 serves, deploy steps ran again', async () => {
    w.repo.commit('v2');
    const task = await run(`${url()}/deploy`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
    expect(w.repo.deployRuns()).toBe(2);
  });

  it('skips the build when the commit already has a ready release, and the deploy steps with skip_steps', async () => {
    const task = await run(`${url()}/deploy`, { skip_steps: true });
    expect(task.status, task.error ?? '').toBe('succeeded');
    const log = await taskLog(t, w.api, task.id);
    expect(log).toContain('is already built; skipping the build');
    expect(log).toContain('Skipping deploy steps (skip_steps)');
    expect(w.repo.deployRuns()).toBe(2);
  });

  it('leaves the live release serving when the build fails, and fails the task with a readable error', async () => {
    w.repo.commit('v3', { buildSteps: ['echo compiling', 'exit 3'] });
    const task = await run(`${url()}/deploy`);
    expect(task.status).toBe('failed');
    expect(task.error).toMatch(/build failed: build step 3 \(exit 3\) exited with code 3/);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
    expect(await taskLog(t, w.api, task.id)).toContain('==> Failed: build failed');
  });
});

describe('POST /environments/{id}/rollback', () => {
  it('puts the release before the last deployment live again, without deploy steps', async () => {
    const before = w.repo.deployRuns();
    const task = await run(`${url()}/rollback`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(task.type).toBe('rollback');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
    expect(w.repo.deployRuns()).toBe(before);
  });

  it('refuses fields in the body', async () => {
    const res = await w.api.post(`${url()}/rollback`, { skip_steps: true });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toEqual({ skip_steps: 'unknown field' });
  });
});

describe('POST /environments/{id}/redeploy', () => {
  it('deploys the live release again with its deploy steps, or without them with skip_steps', async () => {
    const before = w.repo.deployRuns();
    const again = await run(`${url()}/redeploy`);
    expect(again.status, again.error ?? '').toBe('succeeded');
    expect(w.repo.deployRuns()).toBe(before + 1);
    const skipped = await run(`${url()}/redeploy`, { skip_steps: true });
    expect(skipped.status, skipped.error ?? '').toBe('succeeded');
    expect(w.repo.deployRuns()).toBe(before + 1);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
  });

  it('refuses a skip_steps that is not a boolean, naming the field', async () => {
    const res = await w.api.post(`${url()}/redeploy`, { skip_steps: 'yes' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['skip_steps']);
  });
});

describe('deployments and the Temporal workflow list', () => {
  it('records one deployment per successful deploy and lists every task under its search attributes', async () => {
    const tasks = await t.deps.knex('tasks').where({ environment_id: w.environment.id }).select('id', 'status');
    const deployments = await t.deps.knex('deployments').where({ environment_id: w.environment.id });
    expect(deployments.length).toBe(tasks.filter((x) => x.status === 'succeeded').length);
    const one = tasks[0].id;
    const deadline = Date.now() + 20_000;
    let listed: { workflowId: string; taskId: unknown }[] = [];
    for (;;) {
      listed = [];
      for await (const wf of t.deps.temporal.workflow.list({ query: `EnvironmentId = "${w.environment.id}"` })) {
        listed.push({ workflowId: wf.workflowId, taskId: wf.searchAttributes.TaskId?.[0] });
      }
      if (listed.length >= tasks.length || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(listed.map((x) => x.taskId).sort()).toEqual(tasks.map((x) => x.id).sort());
    expect(new Set(listed.map((x) => x.workflowId))).toEqual(new Set([`env-change-${w.environment.id}`]));
    const byTask = [];
    for await (const wf of t.deps.temporal.workflow.list({ query: `TaskId = "${one}"` })) byTask.push(wf);
    expect(byTask).toHaveLength(1);
    expect(
      await t.deps.temporal.workflow
        .getHandle(byTask[0].workflowId, byTask[0].runId)
        .describe()
        .then((d) => d.staticSummary()),
    ).toMatch(/ to production \(|production \(/);
  });
});

describe('commit_message', () => {
  it("records the commit's subject at build, at most 200 characters, answered as commit_message", async () => {
    const subject = `Ünïcode <b>subject</b> ${'x'.repeat(250)}`;
    w.repo.commit('v4'); // the failing build steps of v3 replaced
    const sha = commitAll(w.repo.dir, `${subject}\n\nThe body is not kept.`);
    const task = await run(`${url()}/deploy`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    const choices = deployChoicesSchema.parse((await w.api.get(`${url()}/deploy`)).body);
    if (!choices.allowed) throw new Error(choices.message);
    expect(choices.live_release).toMatchObject({
      commit_sha: sha,
      commit_message: [...subject].slice(0, 200).join(''),
      // what its service.yaml says about serving, read at its build
      serving: { web: 'node server.js', health: '/healthz' },
      went_live: { task_id: task.id, at: expect.any(String) },
    });
    // The release before (v1, live again after the rollback and redeploys above) says its own.
    expect(choices.rollback_release).toMatchObject({ commit_message: 'v1' });
    const releases = releasePageSchema.parse((await w.api.get(`/projects/${w.project.id}/releases`)).body).data;
    const ready = releases.filter((r) => r.status === 'ready');
    expect(ready.map((r) => r.commit_message)).toEqual([[...subject].slice(0, 200).join(''), 'v2', 'v1']);
  });
});

describe('a commit without service.yaml', () => {
  it('goes live with no web process (503), and its log says how to serve the app (npm install: no lockfile)', async () => {
    rmSync(path.join(w.repo.dir, 'service.yaml'));
    writeFileSync(path.join(w.repo.dir, 'package.json'), '{"name": "shop", "scripts": {"start": "node server.js"}}\n');
    commitAll(w.repo.dir, 'no manifest');
    const task = await run(`${url()}/deploy`);
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect((await fetchEnvironment(w.environment.port)).status).toBe(503);
    const log = await taskLog(t, w.api, task.id);
    expect(log).toContain(
      '==> No service.yaml: no build or deploy steps, no web process. package.json has a start script: to serve this app, add a service.yaml at the repository root with build: ["npm install"] and web: "npm start"',
    );
    expect(log).toContain('==> No web command in service.yaml: the environment answers 503 "no web process"');
    // the deploy choices say so, for the console's "Live now"
    const choices = deployChoicesSchema.parse((await w.api.get(`${url()}/deploy`)).body);
    if (!choices.allowed) throw new Error(choices.message);
    expect(choices.live_release?.serving).toEqual({ web: null, health: null });
    // and `service environments` marks its LIVE commit
    const cli = await runCli(t, ['environments'], { ...cliHome(t), VC_TOKEN: w.api.bearer! });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`${choices.live_release!.commit_sha.slice(0, 7)} (no web process)`);
  });
});

describe('a live web process that keeps exiting', () => {
  it("shows on its web server as crash, with the exit's code, until a release that stays up goes live; the team hears of it once", async () => {
    const owner = await sessionAgent(t, w.owner);
    // an environment made through the API, so that it has its web server (the world's is the fixtures')
    const made = await owner.post(`/projects/${w.project.id}/environments`, { name: 'exits', git_ref: 'main' });
    expect(made.status, made.text).toBe(201);
    const env = made.body;
    const webServer = async () => {
      const res = await owner.get(`/servers?team=${w.team.id}`);
      expect(res.status, res.text).toBe(200);
      return res.body.data.find(
        (s: { environment_id: string; role: string }) => s.environment_id === env.id && s.role === 'web',
      );
    };
    expect((await webServer()).crash).toBeNull();
    const slack = await startReceiver();
    const added = await owner.post(`/teams/${w.team.id}/integrations`, {
      kind: 'slack',
      name: 'Ops',
      events: ['app.crashing'],
      webhook_url: slack.url,
    });
    expect(added.status, added.text).toBe(201);
    // the project's rule names the Slack integration, and mails the team's admins
    const rule = await owner.post(`/projects/${w.project.id}/notifications`, {
      rules: [{ event: 'app.crashing', email: 'admins', integration_ids: [added.body.id] }],
    });
    expect(rule.status, rule.text).toBe(200);
    // it answers, so it goes live; then it exits, and every restart does the same
    commitWebApp(w.repo.dir, EXITS_AFTER_A_MOMENT, 'exits after 0.7 s');
    const start = async () => {
      const res = await owner.post(`/environments/${env.id}/deploy`);
      expect(res.status, res.text).toBe(202);
      return waitForTask(t, owner, res.body.id);
    };
    const bad = await start();
    expect(bad.status, bad.error ?? '').toBe('succeeded');
    const crashed = await until(
      'the web server to show three exits',
      async () => {
        const s = await webServer();
        return s.crash?.exits >= 3 ? s : undefined;
      },
      { timeoutMs: 30_000 },
    );
    // the run of exits began once: one message, one activity event
    const [said] = await slack.waitFor(1);
    expect(JSON.parse(said.body).text).toBe(
      `:rotating_light: The app of *${w.project.name} / exits* keeps exiting (code 5): its host restarts it, visitors get 503 meanwhile`,
    );
    const activity = await owner.get(`/teams/${w.team.id}/activity?kind=machines&type=app_crashing`);
    expect(activity.body.data).toEqual([
      expect.objectContaining({
        environment_id: env.id,
        summary: `The app of ${w.project.name}/exits keeps exiting (code 5); its host restarts it`,
      }),
    ]);
    expect(slack.received).toHaveLength(1);
    const subject = `The app of ${w.project.name} / exits keeps exiting`;
    const mail = await t.smtp!.waitFor((m) => m.subject === subject, 30_000);
    expect(mail.to).toEqual([w.owner.email]);
    expect(mail.text).toContain(`The app of ${w.project.name} / exits keeps exiting (code 5)`);
    expect(mail.text).toContain(`/environments/${env.id}`);
    expect(t.smtp!.messages.filter((m) => m.subject === subject)).toHaveLength(1);
    expect(crashed.status).toBe('running');
    expect(crashed.crash).toEqual({
      since: expect.any(String),
      exit_code: 5,
      signal: null,
      exits: expect.any(Number),
      last_exit_at: expect.any(String),
    });
    expect(Date.parse(crashed.crash.last_exit_at)).toBeGreaterThan(Date.parse(crashed.crash.since));
    w.repo.commit('steady');
    const good = await start();
    expect(good.status, good.error ?? '').toBe('succeeded');
    // the answer means it is done: the very next read has no crash
    expect((await webServer()).crash).toBeNull();
    expect((await fetch(env.url)).status).toBe(200);
    await slack.stop();
  });
});

describe('a web process that stops before it answers', () => {
  it("fails the deploy with the app's last output in the task log, its secrets hidden, and what to do", async () => {
    const owner = await sessionAgent(t, w.owner);
    const secret = 'sk_live_Zq7-only-the-app-knows';
    const set = await owner.post(`${url()}/variables`, { name: 'PAYMENTS_KEY', value: secret, secret: true });
    expect(set.status, set.text).toBe(201);
    commitWebApp(
      w.repo.dir,
      "console.log('booting with ' + process.env.PAYMENTS_KEY);\n" +
        "console.error('Error: the payments API refused the key');\nprocess.exit(2);\n",
      'crashes at boot',
    );
    const task = await run(`${url()}/deploy`);
    expect(task.status).toBe('failed');
    expect(task.error).toMatch(
      /web process exited with code 2 before it was ready; the previous release keeps serving$/,
    );
    const log = await taskLog(t, w.api, task.id);
    expect(log).toContain(
      [
        "==> Instance 1's last output (1 line):",
        '    booting with [secret]',
        "==> Instance 1's last error output (1 line):",
        '    Error: the payments API refused the key',
        '==> The app stopped before it answered: fix what it printed, then deploy again',
      ].join('\n'),
    );
    expect(log).not.toContain(secret);
    expect(task.error).not.toContain(secret);
  });
});
