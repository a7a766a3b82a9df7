/**
 * The `service` client deploying for real: the client as a child process, the API, a worker on
 * Temporal, git repositories and web processes (test/helpers/deploy-fixtures.ts). The tests of one
 * describe share the environment and run in order.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { useTestContext } from '../helpers/context';
import {
  commitWebApp,
  createDeployWorld,
  EXITS_AFTER_A_MOMENT,
  fetchEnvironment,
  taskLog,
  waitForTask,
} from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import { until } from '../helpers/until';
import { runCli, cliHome, type CliRun } from '../helpers/cli';
import { storeCliSession } from '../helpers/cli-session';

const t = useTestContext({ worker: true, env: { BUILD_CONCURRENCY: '1' } });
// Each test runs the client (a node process) several times: slow on a busy machine.
vi.setConfig({ testTimeout: 120_000 });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let token: string;
let home: Record<string, string>;
const asToken = () => ({ ...home, VC_TOKEN: token });

beforeAll(async () => {
  w = await createDeployWorld(t);
  token = w.api.bearer!;
  home = cliHome(t);
});

const TASK_ID = /Task ([0-9a-f-]{36})/;

describe('service deploy ENV --wait', () => {
  let first: CliRun;
  let firstTask: string;

  it('prints the task log while the task runs (plain state lines off a terminal)', async () => {
    rmSync(w.repo.gate, { force: true });
    w.repo.commit('v2', { gated: true });
    first = runCli(t, ['deploy', 'production', '--wait'], asToken());
    firstTask = (await first.waitFor(TASK_ID, 'stderr'))[1];
    await first.waitFor(/==> Resolving main/);
    // The build waits for the gate: the client has shown the log of a task that has not ended.
    const task = await w.api.get(`/tasks/${firstTask}`);
    expect(['pending', 'running']).toContain(task.body.status);
    await first.waitFor(new RegExp(`deploy production \\(task ${firstTask}\\): running`), 'stderr');
  });

  it('is refused with exit 3 naming the running task when another deploy runs', async () => {
    const res = await runCli(t, ['deploy', `${w.project.name}/production`], asToken());
    expect(res.code, res.stderr).toBe(3);
    expect(res.stderr).toContain(`task ${firstTask}`);
    expect(res.stderr).toContain('--queue');
    expect(res.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('--queue waits for the running task to end, then deploys; both exit 0 with the whole log', async () => {
    const queued = runCli(t, ['deploy', 'production', '--queue', '--wait', '--skip-steps'], asToken());
    await queued.waitFor(new RegExp(`Task ${firstTask} is in progress on production; waiting`), 'stderr');
    writeFileSync(w.repo.gate, '');
    const a = await first;
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toBe(await taskLog(t, w.api, firstTask));
    expect(a.stderr).toContain(`Task ${firstTask} (deploy) succeeded`);
    // where the time went: the total, and the slowest phase (the build, held at the gate)
    expect(a.stderr).toMatch(/Took \d+\.\d\d s from queued to edge_switched; slowest phase: build_done \d+\.\d\d s/);
    const q = await queued;
    expect(q.code, q.stderr).toBe(0);
    const second = [...q.stderr.matchAll(new RegExp(TASK_ID, 'g'))].map((m) => m[1]).find((id) => id !== firstTask)!;
    expect(second).toBeTruthy();
    expect(q.stdout).toBe(await taskLog(t, w.api, second));
    expect((await w.api.get(`/tasks/${second}`)).body.params).toMatchObject({ skip_steps: true });
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
  });

  it('exits 1 when the deploy fails, the failure named on stderr', async () => {
    w.repo.commit('v3', { buildSteps: ['echo the build broke >&2', 'exit 7'] });
    const res = await runCli(t, ['deploy', w.environment.id, '--wait'], asToken());
    expect(res.code, res.stderr).toBe(1);
    expect(res.stdout).toContain('the build broke');
    expect(res.stderr).toMatch(/\(deploy\) failed/);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
  });

  it('--json prints only the final task as JSON (the log on stderr)', async () => {
    const res = await runCli(t, ['redeploy', 'production', '--wait', '--skip-steps', '--json'], asToken());
    expect(res.code, res.stderr).toBe(0);
    const task = JSON.parse(res.stdout);
    expect(task).toMatchObject({ type: 'redeploy', status: 'succeeded', environment_id: w.environment.id });
    expect(res.stderr).toContain('==> Live: release');
  });

  it('`service api PATH --wait` follows the task a call started: its log on stderr, the ended task on stdout', async () => {
    const res = await runCli(
      t,
      ['api', '/environments/{env}/redeploy', '--env', 'production', '-F', 'skip_steps=true', '--wait'],
      asToken(),
    );
    expect(res.code, res.stderr).toBe(0);
    const task = JSON.parse(res.stdout);
    expect(task).toMatchObject({ type: 'redeploy', status: 'succeeded', environment_id: w.environment.id });
    // the log, whole and in order, between the state lines (`redeploy (task ID): running`) on stderr
    const states = new RegExp(`^redeploy \\(task ${task.id}\\): \\w+\\n`, 'gm');
    expect(res.stderr.replace(states, '')).toContain(await taskLog(t, w.api, task.id));
    expect(res.stderr).toContain(`Task ${task.id} (redeploy) succeeded`);
    expect((await w.api.get(`/tasks/${task.id}`)).body.params).toMatchObject({ skip_steps: true });

    const noTask = await runCli(t, ['api', `/environments/${w.environment.id}`, '--wait'], asToken());
    expect(noTask.code).toBe(4);
    expect(noTask.stderr).toContain('answered no task: leave out --wait');
  });
});

describe('service task ID --follow', () => {
  it('prints the log of an ended task and exits with its outcome', async () => {
    const failed = (await w.api.get(`/tasks?environment=${w.environment.id}&type=deploy`)).body.data.find(
      (x: { status: string }) => x.status === 'failed',
    );
    const res = await runCli(t, ['task', failed.id, '--follow'], asToken());
    expect(res.code).toBe(1);
    expect(res.stdout).toBe(await taskLog(t, w.api, failed.id));
  });
});

describe('service cancel ID', () => {
  it('cancels a build waiting for capacity; its --wait (on a terminal: a spinner) exits 2', async () => {
    rmSync(w.repo.gate, { force: true });
    w.repo.commit('v4', { gated: true });
    const holder = await w.api.post(`/environments/${w.environment.id}/build`);
    expect(holder.status).toBe(202);
    await waitForTask(t, w.api, holder.body.id, { until: (x) => x.status === 'running' });
    // `script` gives the client a real terminal (stdout and stderr both on it).
    const cmd = `${JSON.stringify(process.execPath)} cli/bin.mjs build production --wait`;
    const waiting = runCli(t, [], asToken(), { command: ['script', '-qefc', cmd, '/dev/null'] });
    const pending = (await waiting.waitFor(TASK_ID))[1];
    await waiting.waitFor(/build production \(task [0-9a-f-]+\): pending/);

    const refused = await runCli(t, ['cancel', pending], asToken());
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('service login');

    const session = await storeCliSession(t, w.developer, home);
    const res = await runCli(t, ['cancel', pending], { ...home });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`Task ${pending} (build) is cancelled`);
    const ended = await waiting;
    expect(ended.code, ended.stdout).toBe(2);
    expect(ended.stdout).toContain('\u001b[?25l'); // the spinner hid the cursor: it drew on the terminal
    expect(ended.stdout).toContain('cancelled');
    writeFileSync(w.repo.gate, '');
    await waitForTask(t, w.api, holder.body.id);
    expect(session).toMatch(/^vcs_/);
  });
});

describe('reads', () => {
  it('--json prints what the API answers and nothing else', async () => {
    const env = { ...asToken() };
    const [teams, projects, envs, tasks, releases] = await Promise.all([
      runCli(t, ['teams', '--json'], env),
      runCli(t, ['projects', '--json'], env),
      runCli(t, ['environments', '--json'], env),
      runCli(t, ['tasks', '--environment', 'production', '--limit', '3', '--json'], env),
      runCli(t, ['releases', w.project.name, '--json'], env),
    ]);
    for (const r of [teams, projects, envs, tasks, releases]) expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(teams.stdout).data).toEqual([expect.objectContaining({ id: w.team.id, role: 'developer' })]);
    expect(JSON.parse(projects.stdout).data.map((p: { id: string }) => p.id)).toEqual([w.project.id]);
    expect(JSON.parse(envs.stdout).data.map((e: { id: string }) => e.id)).toEqual([w.environment.id]);
    const page = JSON.parse(tasks.stdout);
    expect(page).toEqual((await w.api.get(`/tasks?environment=${w.environment.id}&limit=3`)).body);
    expect(JSON.parse(releases.stdout)).toEqual((await w.api.get(`/projects/${w.project.id}/releases`)).body);
    const one = await runCli(t, ['task', page.data[0].id, '--json'], env);
    expect(JSON.parse(one.stdout)).toEqual((await w.api.get(`/tasks/${page.data[0].id}`)).body);
  });

  it('tables name environments as project/environment; colour only on a terminal without NO_COLOR', async () => {
    const plain = await runCli(t, ['environments'], asToken());
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(/^NAME\s+ID\s+GIT REF\s+LIVE\s+AUTO DEPLOY/);
    // what each serves: the live release's commit
    const live = (await w.api.get(`/environments/${w.environment.id}/deploy`)).body.live_release.commit_sha as string;
    expect(plain.stdout).toMatch(
      new RegExp(`${w.project.name}/production\\s+${w.environment.id}\\s+main\\s+${live.slice(0, 7)}\\s`),
    );
    expect(plain.stdout).not.toMatch(/\u001b\[/);
    const cmd = `${JSON.stringify(process.execPath)} cli/bin.mjs tasks --limit 2`;
    const tty = await runCli(t, [], asToken(), { command: ['script', '-qefc', cmd, '/dev/null'] });
    expect(tty.stdout).toContain('\u001b[1mID');
    const noColour = await runCli(
      t,
      [],
      { ...asToken(), NO_COLOR: '1' },
      { command: ['script', '-qefc', cmd, '/dev/null'] },
    );
    expect(noColour.code).toBe(0);
    expect(noColour.stdout).toContain('ID');
    expect(noColour.stdout).not.toMatch(/\u001b\[/);
  });

  it('an environment nobody has is refused with exit 4 and what to do', async () => {
    const res = await runCli(t, ['deploy', 'staging'], asToken());
    expect(res.code).toBe(4);
    expect(res.stderr).toContain('No environment "staging"');
    expect(res.stderr).toContain('service environments');
  });
  it('marks an environment whose live app keeps exiting in the LIVE column, for a signed-in person', async () => {
    const owner = await sessionAgent(t, w.owner);
    const made = await owner.post(`/projects/${w.project.id}/environments`, { name: 'exits', git_ref: 'main' });
    expect(made.status, made.text).toBe(201);
    const sha = commitWebApp(w.repo.dir, EXITS_AFTER_A_MOMENT, 'exits after 0.7 s');
    const res = await owner.post(`/environments/${made.body.id}/deploy`);
    expect(res.status, res.text).toBe(202);
    expect((await waitForTask(t, owner, res.body.id)).status).toBe('succeeded');
    await until('an exit on record', async () => {
      const servers = (await owner.get(`/servers?team=${w.team.id}`)).body.data as Array<{
        environment_id: string;
        crash: unknown;
      }>;
      return servers.find((s) => s.environment_id === made.body.id)?.crash;
    });
    await storeCliSession(t, w.owner, home);
    const signedIn = await runCli(t, ['environments'], { ...home });
    expect(signedIn.code, signedIn.stderr).toBe(0);
    expect(signedIn.stdout).toMatch(
      new RegExp(
        `${w.project.name}/exits\\s+${made.body.id}\\s+main\\s+${sha.slice(0, 7)} \\(exiting: code 5, \\d+ times?\\)\\s`,
      ),
    );
    // a token may not read the servers: the column shows the commit alone
    const withToken = await runCli(t, ['environments'], asToken());
    expect(withToken.code, withToken.stderr).toBe(0);
    expect(withToken.stdout).toMatch(new RegExp(`${made.body.id}\\s+main\\s+${sha.slice(0, 7)}\\s`));
    expect(withToken.stdout).not.toContain('exiting');
  });
});
