/**
 * The release a deploy or a build works on, shared by both factories of index.ts: its row, the commit its git ref
 * names now (`resolveSha`) and that commit's subject, the project's repository as git is given it, and the built
 * release opened on this host (reused, fetched from the release store, or built again: `openRelease`); and the
 * output lines of their steps into the task log (`logLines`).
 */
import { Context } from '@temporalio/activity';
import type { Deps } from '../../system/deps';
import { commitSubject, displayUrl, GitError, resolveRef, type GitRepo } from '../../host/git';
import { projectRepository } from '../../core/repository';
import type { BuildResult, OnLine, Provider } from '../../host/provider';
import type { TaskLog } from '../toolkit/task-log';
import { releaseById, type ReleaseRow } from '../../db/queries/releases';
import { ensureRelease, storeRelease } from './release-archives';
import { stepEnv, type tenantEnv } from '../toolkit/step-env';
import { prepareRegistryAuth } from './registry-auth';
import { shortSha } from '../../db/workflow-names';
import { buildMachineSize } from '../../db/queries/machines';
import { planLimits } from '../machines/limits';
import { userFault } from '../toolkit/failures';

/** Output lines into the task log, secret variable values replaced by `[secret]`. */
export function logLines(log: TaskLog, redact: (line: string) => string = (l) => l): OnLine {
  return (_stream, line) => log.line(redact(line));
}

type TenantEnv = Awaited<ReturnType<typeof tenantEnv>>;

/** The release's row; a user fault when it is gone. */
export async function loadRelease(deps: Deps, releaseId: string): Promise<ReleaseRow> {
  const release = await releaseById(deps.knex, releaseId);
  if (!release) throw userFault('ReleaseMissing', `release ${releaseId} no longer exists`);
  return release;
}

/** The subject of the release's commit (from the mirror the build just used), or null when git cannot tell it. */
export async function commitMessageOf(deps: Deps, release: ReleaseRow): Promise<string | null> {
  if (release.commit_message != null) return release.commit_message;
  try {
    const repo = await repository(deps, release.project_id);
    return await commitSubject(repo, release.commit_sha, { access: deps.config, timeoutMs: 20_000 });
  } catch {
    return null;
  }
}

/** The project's repository as git is given it (URL and credentials apart); every git call here uses it. */
async function repository(deps: Deps, projectId: string): Promise<GitRepo> {
  const repo = await projectRepository(deps.knex, deps.secrets, projectId);
  if (!repo) throw userFault('NoRepository', 'the project has no repository connected');
  return repo;
}

/**
 * The built release on this host: its directory and manifest. A release built on this host is reused at
 * once; one built elsewhere is fetched from the release store (provider.ensureRelease: its digest checked,
 * unpacked in place); one the store does not have (built before the store, or pruned past RELEASE_KEEP) is built
 * again from its commit, and put in the store.
 */
export async function openRelease(
  deps: Deps,
  provider: Provider,
  release: ReleaseRow,
  log: TaskLog,
  tenant: TenantEnv,
  signal?: AbortSignal,
): Promise<BuildResult> {
  const env = await deps.knex('environments').where({ id: release.environment_id }).first('port');
  if (!env) throw userFault('EnvironmentMissing', 'the environment no longer exists');
  const here = await ensureRelease(provider, release, env.port);
  if (here) {
    if (here.fetched) log.line(`==> Release ${release.id} fetched from the release store`);
    // built here before the store, or pruned from it past RELEASE_KEEP: the release put live is kept there again
    else if (!release.archive_sha256) await storeRelease(deps, provider, release, log);
    return { ok: true, manifest: here.marker.manifest, releaseDir: here.releaseDir, reused: true };
  }
  const held = provider.heldSteps(
    release.environment_id,
    'build',
    planLimits(deps.config, await buildMachineSize(deps.knex, release.environment_id)),
  );
  const jail = await provider.openJail(release.environment_id, env.port);
  // The project's registry credentials reach the build steps as files, never their output.
  const auth = await prepareRegistryAuth(deps, release.project_id, jail);
  let built: BuildResult;
  try {
    built = await provider.buildRelease({
      jail,
      envId: release.environment_id,
      releaseId: release.id,
      repo: await repository(deps, release.project_id),
      access: deps.config,
      sha: release.commit_sha,
      env: stepEnv(tenant.vars, { ...held.env, ...auth.env }),
      stepTimeoutMs: deps.config.stepTimeoutSeconds * 1000,
      signal,
      onLine: auth.redact(logLines(log, tenant.redact)),
      onSpawn: held.onSpawn,
    });
  } finally {
    await auth.cleanup();
  }
  if (built.ok) await storeRelease(deps, provider, release, log);
  return built;
}

/** The commit `gitRef` names now in the project's repository; `resolving` is the line that says so. */
export async function resolveSha(
  deps: Deps,
  log: TaskLog,
  input: { projectId: string; gitRef: string },
  quiet = false,
): Promise<{ sha: string; resolving: string }> {
  const repo = await repository(deps, input.projectId);
  const resolving = `==> Resolving ${input.gitRef} in ${displayUrl(repo.url)}`;
  if (!quiet) log.line(resolving);
  try {
    const sha = await resolveRef(repo, input.gitRef, { access: deps.config, timeoutMs: 60_000 });
    if (!quiet) log.line(`==> ${input.gitRef} is at ${shortSha(sha)}`);
    return { sha, resolving };
  } catch (err) {
    if (err instanceof GitError) {
      if (quiet) log.line(resolving);
      log.line(`error: ${err.message}`);
      if (err.code === 'ref_not_found') throw userFault('RefNotFound', err.message);
      if (err.code === 'location_refused') throw userFault('RepositoryRefused', err.message);
      const attempt = Context.current().info.attempt;
      if (attempt >= 3) throw userFault('RepositoryUnreachable', err.message);
    }
    throw err;
  }
}
