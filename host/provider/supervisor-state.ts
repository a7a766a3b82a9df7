/**
 * The supervisor's record of an environment's live release: `<dataDir>/environments/<envId>/current.json`,
 * written with mode 0600 through a temp file and a rename. It holds the environment given to the web
 * process (sealed when the supervisor has `protectEnv`) so that restoreAll() can bring it back after a
 * worker restart; `currentRelease()` never returns that part.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Limits } from './cgroups';
import type { Manifest } from '../manifest';
import { environmentDir } from './releases';

interface CurrentRelease {
  envId: string;
  releaseId: string;
  releaseDir: string;
  port: number;
  web: boolean;
  since: string;
  maintenance: { on: boolean; note?: string };
}

export interface StateFile extends CurrentRelease {
  version: 1;
  manifest: Manifest;
  env?: Record<string, string | undefined>;
  /** The env, sealed (SupervisorOptions.protectEnv). */
  envSealed?: string;
  /** Slot 1's pid (files written before scaling have only this one). */
  pid: number | null;
  /** Every instance's pid, slot 1 first. */
  pids?: (number | null)[];
  /** Every instance's port on HOST_ADDRESS (instance-ports.ts), slot 1 first; null: published at its sandbox address. */
  instancePorts?: (number | null)[];
  instances?: number;
  limits?: Limits;
  /** The task that put the release live (a retry of its go-live switches nothing). */
  taskId?: string;
  /**
   * The host that wrote it (HOST_NAME; absent in files from before hosts moved environments): a worker restores
   * only its own, so agents that share a DATA_DIR (tests) never start each other's environments.
   */
  host?: string;
}

export const STATE_FILE = 'current.json';

export function statePath(dataDir: string, envId: string): string {
  return path.join(environmentDir(dataDir, envId), STATE_FILE);
}

/** The release recorded live for an environment, or null. */
export async function currentRelease(dataDir: string, envId: string): Promise<CurrentRelease | null> {
  const s = await readState(statePath(dataDir, envId));
  if (!s) return null;
  return {
    envId: s.envId,
    releaseId: s.releaseId,
    releaseDir: s.releaseDir,
    port: s.port,
    web: s.web,
    since: s.since,
    maintenance: s.maintenance ?? { on: false },
  };
}

export async function readState(file: string): Promise<StateFile | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as StateFile;
  } catch {
    return null;
  }
}

/** Writes the state file atomically (temp file + rename), readable by the worker alone. */
export async function writeStateFile(dataDir: string, state: StateFile): Promise<void> {
  const file = statePath(dataDir, state.envId);
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await writeFile(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
  await rename(tmp, file);
}
