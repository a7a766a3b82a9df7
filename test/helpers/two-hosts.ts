/**
 * Two hosts for a test file (test/workflows/host-moves.test.ts, host-volume-moves.test.ts): the file's own (its
 * in-process worker, `t.config.hostName`) and a worker process for another, with its own name, sandbox tag,
 * SANDBOX_NETWORK block, INSTANCE_PORTS and STORAGE_ROOTS (a volume moved between them is copied). It shares the
 * file's DATA_DIR (and so its release store directory), and the edge reaches both hosts' sandboxes on this machine.
 * Each of the files takes a `part` of the slot's ports and addresses, so that they can run side by side.
 *
 * `useTwoHosts` registers the file's beforeAll and afterAll: a team with a project of the plain app and one of an
 * app that stores files in its volume (`/put`, `/get`, `/where`), an S3 store (s3rver) for snapshots, the other host
 * joined, and the host watch every second.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { TestContext } from './context';
import { createProject, createTeam, createUser, sessionAgent } from './fixtures';
import {
  commitServer,
  createSharedAppRepo,
  fetchEnvironment,
  heldVolumeApp,
  taskLog,
  waitForTask,
} from './deploy-fixtures';
import { spawnSystemProcess, stopChildren } from './processes';
import { until } from './until';
import { startS3 } from './s3';
import type { Agent } from './http';
import { hostWatchDiagnosis, removeHostNetworks, runHostsCli } from './host-moves';
import { testPortSlot } from './test-workers';
import { ensureHostWatchSchedule, hostWatchScheduleId } from '../../core/schedules';
import { listHosts } from '../../db/queries/hosts';
import { hostTag } from '../../host/provider/host-identity';

export type Env = { id: string; port: number; name: string };

interface TwoHosts {
  /** The file's own host's name, and the other's (its cgroup subtree and sandbox tag are named after it). */
  here: string;
  other: string;
  /** The other host's STORAGE_ROOTS: its volumes are apart from the file's host's. */
  otherRoot: string;
  otherRoot2: string;
  /** While this file exists, the other host holds the host watch rounds it takes (VC_FAULT_INJECT hold-activity). */
  holdSweep: string;
  /** The other host's processes, the last one started last. */
  children: ChildProcess[];
  owner: Awaited<ReturnType<typeof createUser>>;
  team: Awaited<ReturnType<typeof createTeam>>;
  agent: Agent;
  project: { id: string; team_id: string };
  /** A project of the app that stores a file in its volume and reads it back. */
  volumeProject: { id: string; team_id: string };
  s3: Awaited<ReturnType<typeof startS3>>;
}

/** Which part of the slot's ports and sandbox addresses the file's other host takes. */
type Part = 0 | 1;

const LOST = 3;

/** The test context of a file with two hosts: its worker, SMTP, and the host watch's and samplers' short times. */
export const twoHostsContext = {
  worker: true,
  smtp: true,
  // the snapshots' S3 store (s3rver) is on loopback
  env: { HOST_LOST_SECONDS: String(LOST), RESOURCE_SAMPLE_SECONDS: '1', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' },
};

/** The file's two hosts; `part` is the file's own (no two files of a run share one). */
export function useTwoHosts(t: TestContext, part: Part) {
  const h = { children: [] as ChildProcess[] } as TwoHosts;
  const slot = testPortSlot();

  function startOtherHost(): ChildProcess {
    // 11 instance ports a slot, between the tests' environment ports (up to 31799) and second-host.ts's (32000 on)
    const ports = 31800 + slot * 11 + part * 6;
    const child = spawnSystemProcess(t, 'processes/worker.ts', {
      HOST_NAME: h.other,
      // its own block of sandbox addresses (the file's host has the default 10.200.0.0/14)
      SANDBOX_NETWORK: `10.${120 + part * 32 + (slot % 8) * 4}.0.0/14`,
      HOST_LOST_SECONDS: String(LOST),
      RESOURCE_SAMPLE_SECONDS: '1',
      STORAGE_ROOTS: `${h.otherRoot},${h.otherRoot2}`,
      // its own INSTANCE_PORTS (instances are reached at HOST_ADDRESS:<instance port>, and both hosts are this machine)
      INSTANCE_PORTS: `${ports}-${ports + 4}`,
      // more room than the file's host: new environments land here
      HOST_CAPACITY: 'cpu=1000,memory_mb=20000000,disk_gb=1000000',
      SMTP_URL: t.smtp!.url,
      // holds the host watch rounds it takes while holdSweep exists (activities/toolkit/keep-alive.ts)
      VC_FAULT_INJECT: `hold-activity:sweepHosts:${h.holdSweep}`,
    });
    h.children.push(child);
    return child;
  }

  const hostsNow = () => listHosts(t.deps.knex, LOST);
  const statusOf = async (name: string) => (await hostsNow()).find((x) => x.name === name)?.status;
  const placement = async (envId: string) =>
    (await t.deps.knex('servers').where({ environment_id: envId, role: 'web' }).first()) as {
      host: string;
      status: string;
    };

  /** A new environment of the project, deployed through the API and answering `v1`. */
  async function deployedEnvironment(name: string, projectId = h.project.id): Promise<Env> {
    const res = await h.agent.post(`/projects/${projectId}/environments`, { name, git_ref: 'main' });
    expect(res.status, res.text).toBe(201);
    const deploy = await h.agent.post(`/environments/${res.body.id}/deploy`);
    expect(deploy.status, deploy.text).toBe(202);
    const task = await waitForTask(t, h.agent, deploy.body.id, { timeoutMs: 90_000 });
    expect(task.status, `${task.error}\n${await taskLog(t, h.agent, task.id)}`).toBe('succeeded');
    const env = await t.deps.knex('environments').where({ id: res.body.id }).first('id', 'port', 'name');
    expect(await fetchEnvironment(env.port)).toEqual({ status: 200, text: 'v1' });
    return env;
  }

  /** What startMove needs of an environment of the plain app's project. */
  const envRef = (env: { id: string; name: string }) => ({
    environment_id: env.id,
    team_id: h.project.team_id,
    project_id: h.project.id,
    name: env.name,
  });

  /** The newest move task of the environment. */
  const newestMove = (envId: string) =>
    t.deps.knex('tasks').where({ environment_id: envId, type: 'move' }).orderBy('created_at', 'desc').first();

  /** A wait on the host watch's work: a timeout also says what the watch was doing (hostWatchDiagnosis). */
  async function untilWatched<T>(
    what: string,
    fn: () => Promise<T | undefined | false> | T | undefined | false,
    o: { timeoutMs: number; detail?: () => string },
  ): Promise<T> {
    try {
      return await until(what, fn, o);
    } catch (err) {
      const diagnosis = await hostWatchDiagnosis(t, hostWatchScheduleId(t.config.taskQueue));
      throw new Error(`${(err as Error).message}\n${diagnosis}`);
    }
  }

  /** A usage sample of the environment, newer than any its host takes, that says its volume is empty. */
  const sampledEmpty = (environmentId: string) =>
    t.deps.knex('resource_samples').insert({
      environment_id: environmentId,
      at: new Date(Date.now() + 3600_000),
      cpu: 0,
      memory_bytes: 0,
      disk_bytes: 0,
      volume_bytes: 0,
    });

  /** A backup destination of the team in the file's S3 store (s3rver). */
  const s3Destination = (name: string) =>
    h.agent.post(`/teams/${h.team.id}/backup-destinations`, {
      kind: 's3',
      name,
      endpoint: h.s3.endpoint,
      region: 'us-east-1',
      bucket: 'backups',
      access_key_id: h.s3.accessKeyId,
      secret_access_key: h.s3.secretAccessKey,
    });

  /** Until the other host's sampler has recorded the environment's volume as holding data (a move then copies it). */
  async function volumeSampled(environmentId: string) {
    await until(
      'a sample of the volume',
      async () =>
        !!(await t.deps
          .knex('resource_samples')
          .where({ environment_id: environmentId })
          .where('volume_bytes', '>', 0)
          .first()),
      { timeoutMs: 30_000 },
    );
  }

  beforeAll(async () => {
    h.here = t.config.hostName;
    h.other = `moves-${t.config.taskQueue.slice(-8)}`;
    const repo = createSharedAppRepo();
    repo.commit('v1');
    h.owner = await createUser(t);
    h.s3 = await startS3();
    h.team = await createTeam(t, h.owner);
    h.project = await createProject(t, h.team, { repository_url: repo.dir });
    const volumeRepo = createSharedAppRepo();
    volumeRepo.commit('v1');
    commitServer(volumeRepo, heldVolumeApp(path.join(volumeRepo.gate, 'never'), 'v1'), 'volume app');
    h.volumeProject = await createProject(t, h.team, { name: 'volumes', repository_url: volumeRepo.dir });
    h.agent = await sessionAgent(t, h.owner);
    const base = mkdtempSync(path.join(t.dataDir, '..', 'roots-b-'));
    chmodSync(base, 0o711);
    h.otherRoot = path.join(base, 'disks');
    h.otherRoot2 = path.join(base, 'disks-2');
    h.holdSweep = path.join(base, 'hold-sweep');
    mkdirSync(h.otherRoot, { mode: 0o755 });
    mkdirSync(h.otherRoot2, { mode: 0o755 });
    startOtherHost();
    await until('the second host to join', async () => (await statusOf(h.other)) === 'ready', { timeoutMs: 60_000 });
    // the host watch, as npm start's worker runs it (every 5 s there), every second here
    await ensureHostWatchSchedule(t.deps.temporal, t.config.taskQueue, { everySeconds: 1 });
  }, 120_000);

  afterAll(async () => {
    await stopHostWatch(t);
    await stopChildren(h.children);
    await h.s3?.stop();
    removeHostNetworks(hostTag(h.other));
  });

  return {
    h,
    startOtherHost,
    hostsCli: (...args: string[]) => runHostsCli(t, LOST, ...args),
    statusOf,
    placement,
    deployedEnvironment,
    envRef,
    newestMove,
    untilWatched,
    sampledEmpty,
    s3Destination,
    volumeSampled,
  };
}

/** The file's host watch gone: its schedule deleted, and the run under way (it does rounds for minutes) ended. */
export async function stopHostWatch(t: TestContext): Promise<void> {
  const handle = t.deps.temporal.schedule.getHandle(hostWatchScheduleId(t.config.taskQueue));
  const running = await handle.describe().then(
    (d) => d.info.runningActions,
    () => [],
  );
  await handle.delete().catch(() => undefined);
  for (const run of running)
    await t.deps.temporal.workflow
      .getHandle(run.workflow.workflowId, run.workflow.firstExecutionRunId)
      .terminate('the test file ended')
      .catch(() => undefined);
}
