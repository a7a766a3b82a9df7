/**
 * The reads a pipeline needs before and around a deploy: the project's releases, what a deploy of an
 * environment would do now (or why it cannot), and where the environment's code comes from.
 */
import type { Deps } from '../../system/deps';
import { Project } from '../../db/models/project';
import { GitError, resolveRef, type GitRepo } from '../../host/git';
import { projectRepositoryOf } from '../../core/repository';
import { lastWentLive, liveRelease, rollbackTarget, type ReleaseRow } from '../../db/queries/releases';
import { runningExclusiveTask } from '../../db/queries/tasks';
import type { Actor } from '../../core/actor';
import { can, roleIn } from '../lib/policy';
import { encodeCursor, pageOf } from '../lib/pagination';
import { cursorTimeSql } from '../../db/cursor-sql';
import { displayUrl } from '../../core/ls-remote';
import { findProject } from '../projects/service';
import { findEnvironment } from '../environments/service';
import { RELEASES_CURSOR } from './schemas';
import { iso, isoOrNull } from '../../core/time';

export const GIT_READ_TIMEOUT_MS = 20_000;

export async function listReleases(
  deps: Deps,
  actor: Actor,
  projectId: string,
  query: { branch?: string; limit: number; before?: { at: string; id: string } },
) {
  const { project } = await findProject(deps, actor, projectId, 'project:read');
  const { knex } = deps;
  const q = knex('releases as r')
    .join('environments as e', 'e.id', 'r.environment_id')
    .where('r.project_id', project.id)
    .select(
      'r.id',
      'r.environment_id',
      'r.git_ref',
      'r.commit_sha',
      'r.commit_message',
      'r.status',
      'r.built_at',
      'r.created_at',
      knex.raw('(e.live_release_id IS NOT DISTINCT FROM r.id) AS live'),
      knex.raw(`${cursorTimeSql('r.created_at')} AS cursor_at`),
    )
    .orderBy([
      { column: 'r.created_at', order: 'desc' },
      { column: 'r.id', order: 'desc' },
    ])
    .limit(query.limit + 1);
  if (query.branch) q.where('r.git_ref', query.branch);
  if (query.before) q.whereRaw('(r.created_at, r.id) < (?::timestamptz, ?::uuid)', [query.before.at, query.before.id]);
  const { page, more } = pageOf(await q, query.limit);
  const last = page.at(-1);
  return {
    data: page.map((r) => ({
      id: r.id,
      environment_id: r.environment_id,
      git_ref: r.git_ref,
      commit_sha: r.commit_sha,
      commit_message: r.commit_message ?? null,
      status: r.status,
      built_at: isoOrNull(r.built_at),
      created_at: iso(r.created_at),
      live: Boolean(r.live),
    })),
    next_before: more && last ? encodeCursor(RELEASES_CURSOR, [last.cursor_at, last.id]) : null,
  };
}

type HeadResult =
  | { ok: true; sha: string }
  | { ok: false; code: 'repository_unreachable' | 'ref_not_found'; message: string };

/** The commit the git ref names now (git ls-remote), or why it cannot be told. */
export async function headCommit(deps: Deps, repo: GitRepo, gitRef: string): Promise<HeadResult> {
  try {
    const sha = await resolveRef(repo, gitRef, { access: deps.config, timeoutMs: GIT_READ_TIMEOUT_MS });
    return { ok: true, sha };
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    if (err.code === 'ref_not_found') {
      return {
        ok: false,
        code: 'ref_not_found',
        message: `No branch, tag or commit named "${gitRef}" in the repository`,
      };
    }
    return {
      ok: false,
      code: 'repository_unreachable',
      message: `The repository cannot be read right now: ${err.message}`,
    };
  }
}

const releaseRef = (r: (ReleaseRow & { built_at?: Date | string | null }) | undefined) =>
  r
    ? {
        id: r.id,
        git_ref: r.git_ref,
        commit_sha: r.commit_sha,
        commit_message: r.commit_message ?? null,
        built_at: isoOrNull(r.built_at),
      }
    : null;

/** The live release with the deployment that last put it live (its task and when). */
async function liveRef(knex: Deps['knex'], envId: string, r: ReleaseRow | undefined) {
  const ref = releaseRef(r);
  if (!ref) return null;
  const d = await lastWentLive(knex, envId, ref.id);
  return {
    ...ref,
    serving: r?.serving ?? null,
    went_live: d?.task_id ? { task_id: d.task_id, at: iso(d.went_live_at) } : null,
  };
}

/** What a deploy of the environment would do now, or why none can be asked. */
export async function deployChoices(deps: Deps, actor: Actor, environmentId: string) {
  const env = await findEnvironment(deps, actor, environmentId, 'environment:read');
  const { knex } = deps;
  const blocked = (reason: string, message: string, extra: Record<string, unknown> = {}) => ({
    allowed: false as const,
    reason,
    message,
    git_ref: env.git_ref,
    ...extra,
  });
  const role = await roleIn(knex, actor, env.team_id);
  if (!role || !can(role, 'deploy')) return blocked('forbidden', 'Your role in this team does not allow deploys');
  const project = await Project.query(knex).findById(env.project_id);
  if (!project?.repository_url) {
    return blocked('no_repository', 'The project has no repository connected: connect one to the project first');
  }
  const running = await runningExclusiveTask(knex, env.id);
  if (running)
    return blocked('deploy_in_progress', 'Another deploy runs on this environment; wait for it to finish', {
      task_id: running.id,
    });
  const head = await headCommit(deps, (await projectRepositoryOf(deps.knex, deps.secrets, project))!, env.git_ref);
  if (!head.ok) return blocked(head.code, head.message);
  const [live, rollback, built] = await Promise.all([
    liveRelease(knex, env.id),
    rollbackTarget(knex, env.id),
    knex('releases').where({ environment_id: env.id, commit_sha: head.sha, status: 'ready' }).first('id'),
  ]);
  return {
    allowed: true as const,
    git_ref: env.git_ref,
    head_commit: head.sha,
    head_built: Boolean(built),
    live_release: await liveRef(knex, env.id, live),
    rollback_release: releaseRef(rollback),
    skip_steps_allowed: true as const,
  };
}

/** Where the environment's code comes from: the repository (without credentials), its ref and that ref's head. */
export async function environmentSource(deps: Deps, actor: Actor, environmentId: string) {
  const env = await findEnvironment(deps, actor, environmentId, 'environment:read');
  const project = await Project.query(deps.knex).findById(env.project_id);
  if (!project?.repository_url) return { repository: null, git_ref: env.git_ref, head_commit: null };
  const head = await headCommit(deps, (await projectRepositoryOf(deps.knex, deps.secrets, project))!, env.git_ref);
  return {
    repository: { url: displayUrl(project.repository_url) },
    git_ref: env.git_ref,
    head_commit: head.ok ? head.sha : null,
    ...(head.ok ? {} : { error: { code: head.code, message: head.message } }),
  };
}
