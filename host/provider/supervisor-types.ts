/**
 * The supervisor's options, results and in-memory records (supervisor.ts). Kept apart so that the state file,
 * the process set and the publishing code can share them without importing the class.
 */
import type { OnWebCrash } from './supervisor-crash';
import type { Limits } from './cgroups';
import type { Manifest } from '../manifest';
import type { OnLine } from './run-step';
import type { InstanceExposure } from './instance-ports';
import type { Backoff, WebProcess } from './web-process';

export interface SupervisorOptions {
  dataDir: string;
  /** Address the environments' public ports listen on (default 127.0.0.1). */
  listenHost?: string;
  /** SIGTERM to SIGKILL when a web process is stopped (default 5000 ms). */
  stopGraceMs?: number;
  restartBackoff?: Partial<Backoff>;
  /** Readiness wait of each environment in restoreAll (default 30000 ms). */
  restoreHealthTimeoutMs?: number;
  /** Seals the web processes' environment in current.json (system/crypto.ts under the console's key). */
  protectEnv?: { seal(text: string): string; open(sealed: string): string };
  /**
   * Called after every change of where an environment is served (null: taken off this host). The edge
   * (HAProxy, driven by its own process) serves the environments' public ports from what is published here;
   * the supervisor listens on none. It resolves once every edge serves it, or throws (the edge did not apply it
   * in time); `wait: false` only records it (a route put back after a failed switch); `say` is the task's log.
   */
  publish?: (
    envId: string,
    route: PublishedRoute | null,
    o?: { wait?: boolean; say?: (line: string) => void },
  ) => Promise<void>;
  /**
   * With `publish`: how long an instance taken out of the route keeps running, so that the edge (which learns
   * of the change by notification) stops sending to it first (default 1000 ms).
   */
  drainMs?: number;
  /**
   * Where the edge reaches this host's instances (HOST_ADDRESS) and who hands out their instance ports
   * (instance-ports.ts): each instance is published as `HOST_ADDRESS:<instance port>`. None: at its sandbox
   * address (a supervisor with no edge of other machines: a test's).
   */
  exposure?: InstanceExposure;
  /**
   * Told, in order, when the live web instances of an environment start to keep exiting (each exit updates the
   * record) and when they are steady again (null: each restarted one stayed up `restartBackoff.stableMs`, or new
   * instances went live). The worker writes it to the environment's `web` server (servers.crash).
   */
  onWebCrash?: OnWebCrash;
}

/** Where an environment is served, as the edge needs it: host AND port (HOST_ADDRESS and an instance port). */
export type PublishedRoute =
  | { kind: 'upstream'; host: string; port: number; releaseId: string; upstreams: Upstream[] }
  | { kind: 'unavailable'; text: string; releaseId: string | null };

/** One web instance as the edge reaches it; `id` (its slot, "1".."N") names it in the stickiness cookie. */
interface Upstream {
  id: string;
  host: string;
  port: number;
}

/** The moments of a go-live or restart a task records as its phases (activities/toolkit/phases.ts). */
export type SupervisorPhase = 'process_started' | 'healthy' | 'edge_switched' | 'old_stopped';
/** Told each phase as it ends; `old_stopped` may come after the call returned (the old instances drain). */
export type OnPhase = (phase: SupervisorPhase) => void;

export interface RestartOptions {
  envId: string;
  /** Complete new environment of the web process (PORT is set by the supervisor). */
  env: Record<string, string | undefined>;
  healthTimeoutMs: number;
  onLine?: OnLine;
  /** Aborts the restart (the task was cancelled, its worker is stopping): the instances running keep serving. */
  signal?: AbortSignal;
  onPhase?: OnPhase;
}

export interface GoLiveOptions {
  envId: string;
  port: number;
  releaseId: string;
  releaseDir: string;
  manifest: Manifest;
  /** Complete environment of the web process (PORT is set by the supervisor). */
  env: Record<string, string | undefined>;
  healthTimeoutMs: number;
  onLine?: OnLine;
  /** The plan of the environment's web server: each web process is held to it (cgroups.ts) and told it. */
  limits?: Limits;
  /** How many web instances (default: as many as run now, else 1). */
  instances?: number;
  /**
   * The task putting it live: a retried go-live of the same task finds it live and switches nothing; any
   * other task (a redeploy of the live release) starts new instances.
   */
  taskId?: string;
  onPhase?: OnPhase;
}

export type GoLiveResult =
  | { ok: true; alreadyLive: boolean; internalPort: number | null }
  | { ok: false; message: string };

export type RestartResult = { ok: true; restarted: boolean } | { ok: false; message: string };

export type ScaleResult = { ok: true; instances: number; changed: boolean } | { ok: false; message: string };

interface InstanceStatus {
  slot: number;
  pid: number | null;
  internalPort: number;
  running: boolean;
  restarts: number;
}

export interface EnvironmentStatus {
  releaseId: string;
  port: number;
  internalPort: number | null;
  pid: number | null;
  running: boolean;
  restarts: number;
  /** Every web instance, slot 1 first (the fields above are slot 1's). */
  instances: InstanceStatus[];
}

export interface Live {
  releaseId: string;
  releaseDir: string;
  manifest: Manifest;
  env: Record<string, string | undefined>;
  since: string;
  /** The web instances, slot 1 first; empty without a web command. */
  webs: WebProcess[];
  /** How many instances the environment runs (kept without a web command, for the next release). */
  instances: number;
  limits?: Limits;
  /** The task that put it live (GoLiveOptions.taskId). */
  taskId?: string;
}

export interface Runtime {
  envId: string;
  /** The environment's public port while this host serves it (the edge listens on it). */
  served: { port: number } | null;
  live: Live | null;
  maintenance: { on: boolean; note?: string };
  lock: Promise<unknown>;
}
