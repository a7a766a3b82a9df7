/**
 * The provider: what touches the machine an environment runs on, behind one interface that activities call
 * (given to them by createActivities). `createLocalProvider` is the one implementation: this machine, its
 * sandboxes (sandbox.ts, sandbox-network.ts), web processes (supervisor*.ts), cgroups (cgroups.ts), the build
 * and deploy steps (releases.ts, run-step.ts), volumes (volume.ts) and usage (usage.ts), every machine object
 * named after the host (host-identity.ts).
 *
 * Releases built here go to the release store (release-archive.ts, host/release-store.ts), and a release this host
 * does not have is fetched from it (`ensureRelease`).
 *
 * This file is the provider's whole surface: activities import nothing else of host/provider/ (a Biome rule,
 * biome.json), so the types and the errors they see are exported here.
 *
 * One process holds one host's provider: the local provider configures the process's host identity and
 * sandbox when it is created.
 */
import type { Config } from '../../system/config';
import { createReleaseStore, type ReleaseStore } from '../release-store';
import { configureHostIdentity, type HostIdentity } from './host-identity';
import { holdProcess, type Limits, limitEnv } from './cgroups';
import { fetchRelease, packRelease, type PackedRelease } from './release-archive';
import {
  type BuildReleaseOptions,
  type BuildResult,
  buildRelease,
  type DeployStepsOptions,
  type ReleaseMarker,
  readReleaseMarker,
  releaseDirFor,
  runDeploySteps,
  type StepsResult,
} from './releases';
import { type InstancePortBook, memoryInstancePorts, pruneInstanceForwards } from './instance-ports';
import {
  configureSandbox,
  environmentDir,
  type Jail,
  jailAddresses,
  openJail,
  prepareHost,
  type SandboxMode,
  sandboxMode,
  tenantUid,
} from './sandbox';
import { Supervisor } from './supervisor';
import type { SupervisorOptions } from './supervisor-types';
import { diskBytesOf, processUsage, type Usage } from './usage';
import { prepareVolume, volumeTar } from './volume';

export type { Limits } from './cgroups';
export { ReleaseDigestMismatch } from './release-archive';
export type { BuildResult } from './releases';
export type { OnLine } from './run-step';
export type { Jail } from './sandbox';

export interface Provider {
  /** The host this provider is: its name, the tag its machine objects carry, its sandboxes' block. */
  readonly host: HostIdentity;
  /** The environments' web processes on this host (go live, restart, scale, stop, retire, restore). */
  readonly supervisor: Supervisor;
  /** How strongly tenants are isolated here (announced loudly once when less than namespaces). */
  isolation(): { mode: SandboxMode; reason: string };
  /** At worker start: DATA_DIR's modes as the sandboxes want them, before any environment runs. */
  prepare(): Promise<void>;
  /** The environment's sandbox, set up if needed (idempotent). */
  openJail(envId: string, port: number): Promise<Jail>;
  /** The uid the environment's processes run as here; null when they run as the worker. */
  tenantUid(port: number): number | null;
  /** Where the environment's processes reach the services server's port (its gateway); null without namespaces. */
  gateway(port: number): string | null;
  /** The environment's directory on this host (releases, HOME, logs). */
  environmentDir(envId: string): string;
  /** Makes the environment's volume directory exist, owned by its uid. */
  prepareVolume(envId: string, port: number, dir: string): Promise<void>;
  /** A tar of the environment's volume directory on this host (the files part of a snapshot); nothing when absent. */
  volumeTar(volume: string): AsyncIterable<Buffer>;
  /**
   * Builds a release from its commit in the environment's sandbox (`jail`, from openJail): checked out, its
   * manifest's build steps run, renamed in complete with its marker. A failure of the user's making is a result.
   */
  buildRelease(o: Omit<BuildReleaseOptions, 'dataDir'>): Promise<BuildResult>;
  /** The manifest's deploy steps, run in the release directory in the sandbox, stopping at the first that fails. */
  runDeploySteps(o: DeployStepsOptions): Promise<StepsResult>;
  /**
   * What a build or deploy step of the environment needs to be held to a plan: the variables that tell it the
   * plan (VC_CPU, VC_MEMORY_MB) and the hook that places it in its cgroup right after spawn. Without a plan: nothing.
   */
  heldSteps(envId: string, role: 'build' | 'deploy', limits: Limits | null): HeldSteps;
  /** What the environment's processes use now (CPU time, memory). */
  usage(envId: string): Usage;
  /**
   * Bytes under each directory of this host (0 when it does not exist, or, with `content`, is empty), measured
   * together (usage.ts diskBytesOf).
   */
  diskBytesOf(dirs: Array<{ dir: string; content?: boolean }>): Promise<Map<string, number>>;
  /** The operator's release store (RELEASE_STORE), as this host reaches it. */
  readonly releaseStore: ReleaseStore;
  /** Packs a release built on this host and puts it in the release store: its digest and size. */
  storeRelease(envId: string, releaseId: string): Promise<PackedRelease>;
  /**
   * The release on this host: here already, or fetched from the release store (its digest checked against
   * `sha256`, throws ReleaseDigestMismatch) and unpacked. null when it is not here and the store has none.
   */
  ensureRelease(r: EnsureRelease): Promise<{ releaseDir: string; marker: ReleaseMarker; fetched: boolean } | null>;
  /**
   * Takes away the forwards of this host's instance ports (INSTANCE_PORTS on HOST_ADDRESS) that no instance
   * holds: what instances gone without a stop left (a worker's start), or every one (after stopAll, a clean stop).
   */
  pruneInstanceForwards(): Promise<number[]>;
}

interface HeldSteps {
  env: Record<string, string>;
  onSpawn: ((pid: number) => void) | undefined;
}

interface EnsureRelease {
  envId: string;
  port: number;
  releaseId: string;
  /** The commit it was built from. */
  sha: string;
  /** The archive's digest recorded with the release (null: never put in the store). */
  sha256: string | null;
}

interface LocalProviderOptions {
  config: Pick<
    Config,
    | 'dataDir'
    | 'hostName'
    | 'sandboxNetwork'
    | 'sandboxSharedDirs'
    | 'environmentBind'
    | 'hostAddress'
    | 'instancePorts'
    | 'releaseStore'
  >;
  /** Who hands out this host's instance ports (the worker's: the `instance_ports` table); default, this process alone. */
  instancePorts?: InstancePortBook;
  /**
   * The services server's port sandboxes may reach at their gateway, and one kept closed (trusting); `target`: its
   * IPv4 address as this host sees it (SERVICES_HOST, resolved), default 127.0.0.1.
   */
  services?: { port: number | null; trusting: number | null; target?: string };
  /** The supervisor's options but where it runs (DATA_DIR, ENVIRONMENT_BIND). */
  supervisor?: Omit<SupervisorOptions, 'dataDir' | 'listenHost'>;
  warn?: (message: string) => void;
}

/** This machine as a provider (see the file comment). */
export function createLocalProvider(o: LocalProviderOptions): Provider {
  const { config } = o;
  const warn = o.warn ?? ((m: string) => console.warn(m));
  const host = configureHostIdentity({ hostName: config.hostName, sandboxNetwork: config.sandboxNetwork });
  configureSandbox({
    sharedDirs: config.sandboxSharedDirs,
    servicesPort: o.services?.port ?? null,
    trustingPort: o.services?.trusting ?? null,
    servicesTarget: o.services?.target,
  });
  // the edge reaches every instance at HOST_ADDRESS:<instance port>, never at a sandbox address
  const exposure = { address: config.hostAddress, book: o.instancePorts ?? memoryInstancePorts(config.instancePorts) };
  const supervisor = new Supervisor({
    ...o.supervisor,
    dataDir: config.dataDir,
    listenHost: config.environmentBind,
    exposure,
  });
  const isolation = () => sandboxMode(warn);
  const releaseStore = createReleaseStore(config.releaseStore);
  return {
    host,
    supervisor,
    isolation,
    prepare: () => prepareHost(config.dataDir, warn),
    openJail: (envId, port) => openJail(config.dataDir, envId, port),
    tenantUid: (port) => (isolation().mode === 'none' ? null : tenantUid(port)),
    gateway: (port) => (isolation().mode === 'namespaces' ? jailAddresses(port).host : null),
    environmentDir: (envId) => environmentDir(config.dataDir, envId),
    prepareVolume: async (envId, port, dir) => prepareVolume(await openJail(config.dataDir, envId, port), dir),
    volumeTar,
    buildRelease: (b) => buildRelease({ ...b, dataDir: config.dataDir }),
    runDeploySteps,
    heldSteps: (envId, role, limits) =>
      limits
        ? { env: limitEnv(limits), onSpawn: (pid: number) => void holdProcess(envId, role, pid, limits) }
        : { env: {}, onSpawn: undefined },
    usage: (envId) => processUsage(envId, supervisor.status(envId)?.pid ?? null),
    diskBytesOf,
    releaseStore,
    storeRelease: (envId, releaseId) => packRelease({ dataDir: config.dataDir, store: releaseStore, envId, releaseId }),
    async ensureRelease(r) {
      const releaseDir = releaseDirFor(config.dataDir, r.envId, r.releaseId);
      const here = await readReleaseMarker(releaseDir);
      if (here?.sha === r.sha && here.releaseId === r.releaseId) return { releaseDir, marker: here, fetched: false };
      if (!r.sha256) return null;
      const marker = await fetchRelease({
        dataDir: config.dataDir,
        store: releaseStore,
        envId: r.envId,
        releaseId: r.releaseId,
        sha: r.sha,
        sha256: r.sha256,
        jail: await openJail(config.dataDir, r.envId, r.port),
      });
      return marker ? { releaseDir, marker, fetched: true } : null;
    },
    pruneInstanceForwards: async () =>
      isolation().mode === 'namespaces'
        ? pruneInstanceForwards(exposure.address, config.instancePorts, supervisor.instancePortsHeld())
        : [],
  };
}
