/**
 * Releases on this host: `<dataDir>/environments/<envId>/releases/<releaseId>/` holds the checked-out tree of
 * one commit after its `build` steps ran, plus a completion marker `.vc-release.json`.
 *
 * A build happens in `releases/.tmp-<releaseId>-<random>/` and is renamed into place only when every step
 * succeeded, with the marker already inside; so a release directory either is complete or does not exist.
 * A retried build (worker crash, activity retry) finds the marker and returns at once.
 *
 * Faults of the user's making (an invalid manifest, a failing step, a cancelled build) are results with
 * `ok: false`; faults of the host (git unreachable, disk) are thrown, so the caller may retry them.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { checkout, displayUrl, type GitAccess, type GitRepo } from '../git';
import { absentManifestAdvice, describeManifestFaults, readManifest, type Manifest } from '../manifest';
import { runStep, type OnLine, type RunStepResult } from './run-step';
import { environmentDir, giveTree, safeSegment, type Jail } from './sandbox';
import { removeTree, withDir } from '../no-follow';

export { environmentDir };

const RELEASE_MARKER = '.vc-release.json';

export interface ReleaseMarker {
  releaseId: string;
  envId: string;
  sha: string;
  manifest: Manifest;
  builtAt: string;
}

interface FailedStep {
  phase: 'build' | 'deploy';
  index: number;
  command: string;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
}

export type StepsResult =
  | { ok: true }
  | { ok: false; reason: 'step_failed' | 'cancelled'; message: string; failedStep?: FailedStep };

export type BuildResult =
  | { ok: true; manifest: Manifest; releaseDir: string; reused: boolean }
  | {
      ok: false;
      reason: 'manifest_invalid' | 'step_failed' | 'cancelled';
      message: string;
      manifest?: Manifest;
      fields?: Record<string, string>;
      failedStep?: FailedStep;
    };

interface StepOptions {
  /** Complete environment of every step (the caller merges variables onto PATH and the like; HOME is the jail's). */
  env: Record<string, string | undefined>;
  /** The environment's sandbox: every step runs in it, as its uid, in a tree it owns. */
  jail: Jail;
  stepTimeoutMs: number;
  signal?: AbortSignal;
  onLine: OnLine;
  killGraceMs?: number;
  /** Called right after each step's spawn with its pid (holds it to the plan: cgroups.ts). */
  onSpawn?: (pid: number) => void;
}

export interface BuildReleaseOptions extends StepOptions {
  dataDir: string;
  envId: string;
  releaseId: string;
  /** The repository (URL without credentials, credentials apart) and where repositories may be. */
  repo: GitRepo;
  access: GitAccess;
  sha: string;
  gitTimeoutMs?: number;
}

export interface DeployStepsOptions extends StepOptions {
  releaseDir: string;
  manifest: Manifest;
}

export function releasesDir(dataDir: string, envId: string): string {
  return path.join(environmentDir(dataDir, envId), 'releases');
}

export function releaseDirFor(dataDir: string, envId: string, releaseId: string): string {
  return path.join(releasesDir(dataDir, envId), safeSegment(releaseId, 'release id'));
}

/**
 * The completion marker of a built release, or null when the directory is absent or incomplete. The tree
 * belongs to the tenant: it is read from a descriptor (no-follow.ts), so a symlink or a FIFO planted there is
 * not followed (nor waited on) by the worker.
 */
export async function readReleaseMarker(releaseDir: string): Promise<ReleaseMarker | null> {
  try {
    return await withDir(path.dirname(releaseDir), [path.basename(releaseDir)], async (dir) => {
      const fh = await dir.file(RELEASE_MARKER);
      try {
        return JSON.parse(await fh.readFile('utf8')) as ReleaseMarker;
      } finally {
        await fh.close();
      }
    });
  } catch {
    return null;
  }
}

/** Writes the marker into a tree the tenant owned while its steps ran: whatever it left under that name goes first. */
export async function writeReleaseMarker(dir: string, marker: ReleaseMarker): Promise<void> {
  await withDir(path.dirname(dir), [path.basename(dir)], async (tree) => {
    await tree.remove(RELEASE_MARKER);
    await tree.writeNew(RELEASE_MARKER, JSON.stringify(marker, null, 2), 0o644);
  });
}

const inflight = new Map<string, Promise<unknown>>();

/**
 * Checks out `sha` and runs the manifest's `build` steps in order, stopping at the first that fails.
 * Idempotent per release: a complete release for the same sha is returned as is (`reused: true`).
 */
export async function buildRelease(opts: BuildReleaseOptions): Promise<BuildResult> {
  const finalDir = releaseDirFor(opts.dataDir, opts.envId, opts.releaseId);
  // A second attempt in this process waits for the first to settle, then looks again.
  while (inflight.has(finalDir)) await inflight.get(finalDir)!.catch(() => undefined);
  const run = buildOnce(opts, finalDir);
  inflight.set(finalDir, run);
  try {
    return await run;
  } finally {
    inflight.delete(finalDir);
  }
}

async function buildOnce(opts: BuildReleaseOptions, finalDir: string): Promise<BuildResult> {
  const { dataDir, envId, releaseId, repo, sha, onLine } = opts;
  const say = (line: string) => safeLine(onLine, 'stdout', `==> ${line}`);

  const done = await completed(finalDir, sha, releaseId);
  if (done) {
    say(`Release ${releaseId} is already built from ${sha.slice(0, 12)}`);
    return { ok: true, manifest: done.manifest, releaseDir: finalDir, reused: true };
  }

  const parent = releasesDir(dataDir, envId);
  await mkdir(parent, { recursive: true });
  // root's: the tenant may not add, swap or rename entries here, only work inside its own release trees
  if (opts.jail.uid !== null) await chmod(parent, 0o711);
  await removeStale(parent, releaseId);
  // Without its marker a release directory is not ours to keep (we never rename an incomplete one in).
  await removeTree(parent, path.basename(finalDir));
  const tmpDir = path.join(parent, `.tmp-${releaseId}-${randomBytes(4).toString('hex')}`);

  try {
    if (opts.signal?.aborted) return cancelledResult();
    say(`Checking out ${sha.slice(0, 12)} from ${displayUrl(repo.url)}`);
    await checkout({ repo, sha, dir: tmpDir, access: opts.access, timeoutMs: opts.gitTimeoutMs });
    await giveTree(opts.jail, tmpDir);

    const read = await readManifest(tmpDir);
    if (!read.ok) {
      const message = `service.yaml is invalid: ${describeManifestFaults(read.fields)}`;
      safeLine(onLine, 'stderr', message);
      return { ok: false, reason: 'manifest_invalid', message, fields: read.fields };
    }
    const manifest = read.manifest;
    if (!read.present) say(absentManifestAdvice(read.suggested));

    const steps = await runSteps('build', manifest.build, tmpDir, opts);
    if (!steps.ok) return { ...steps, manifest };

    const marker: ReleaseMarker = { releaseId, envId, sha, manifest, builtAt: new Date().toISOString() };
    await writeReleaseMarker(tmpDir, marker);
    try {
      await rename(tmpDir, finalDir);
    } catch (err) {
      // Someone completed the same release meanwhile: theirs stands if it is the same commit.
      const other = await completed(finalDir, sha, releaseId);
      if (other) return { ok: true, manifest: other.manifest, releaseDir: finalDir, reused: true };
      throw err;
    }
    say(`Release ${releaseId} built`);
    return { ok: true, manifest, releaseDir: finalDir, reused: false };
  } finally {
    await removeTree(parent, path.basename(tmpDir));
  }
}

/** Runs the manifest's `deploy` steps in the release directory, stopping at the first that fails. */
export function runDeploySteps(opts: DeployStepsOptions): Promise<StepsResult> {
  return runSteps('deploy', opts.manifest.deploy, opts.releaseDir, opts);
}

async function runSteps(
  phase: 'build' | 'deploy',
  commands: string[],
  cwd: string,
  opts: StepOptions,
): Promise<StepsResult> {
  for (const [index, command] of commands.entries()) {
    if (opts.signal?.aborted) return cancelledResult();
    safeLine(opts.onLine, 'stdout', `$ ${command}`);
    const r: RunStepResult = await runStep({
      command,
      cwd,
      env: opts.env,
      jail: opts.jail,
      timeoutMs: opts.stepTimeoutMs,
      signal: opts.signal,
      onLine: opts.onLine,
      killGraceMs: opts.killGraceMs,
      onSpawn: opts.onSpawn,
    });
    if (r.cancelled) return cancelledResult();
    if (r.exitCode === 0) continue;
    const failedStep: FailedStep = {
      phase,
      index,
      command,
      exitCode: r.exitCode,
      signal: r.signal,
      timedOut: r.timedOut,
    };
    const why = r.timedOut
      ? `did not finish within ${Math.round(opts.stepTimeoutMs / 1000)} s`
      : r.exitCode !== null
        ? `exited with code ${r.exitCode}`
        : `was killed by ${r.signal}`;
    const message = `${phase} step ${index + 1} (${command}) ${why}`;
    safeLine(opts.onLine, 'stderr', message);
    return { ok: false, reason: 'step_failed', message, failedStep };
  }
  return { ok: true };
}

function cancelledResult(): { ok: false; reason: 'cancelled'; message: string } {
  return { ok: false, reason: 'cancelled', message: 'cancelled' };
}

async function completed(finalDir: string, sha: string, releaseId: string): Promise<ReleaseMarker | null> {
  const marker = await readReleaseMarker(finalDir);
  if (!marker) return null;
  if (marker.sha !== sha || marker.releaseId !== releaseId) {
    throw new Error(`release ${releaseId} already exists, built from ${marker.sha}, not ${sha}`);
  }
  return marker;
}

/** Temp directories of earlier, interrupted attempts at this release. */
async function removeStale(parent: string, releaseId: string): Promise<void> {
  const prefix = `.tmp-${releaseId}-`;
  for (const name of await readdir(parent)) {
    if (name.startsWith(prefix)) await removeTree(parent, name);
  }
}

function safeLine(onLine: OnLine, stream: 'stdout' | 'stderr', line: string): void {
  try {
    onLine(stream, line);
  } catch {
    // a failing log sink does not fail the build
  }
}
