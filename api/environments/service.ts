import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { Environment } from '../../db/models/environment';
import { Project } from '../../db/models/project';
import { Task } from '../../db/models/task';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { authorize, reachableTeamIds, type Action } from '../lib/policy';
import { branchesOf, lsRemote, refExists } from '../../core/ls-remote';
import { projectRepositoryOf } from '../../core/repository';
import type { GitRepo } from '../../host/git';
import { NAME_RULES } from '../projects/schemas';
import { encodeCursor, pageOf } from '../lib/pagination';
import { ENVIRONMENTS_CURSOR } from './schemas';
import { findProject } from '../projects/service';
import { environmentUrl, type Config } from '../../system/config';
import { createEnvironmentMachines } from '../machines/service';
import { dropEnvironmentServices, startRetire } from '../../core/environment-retire';
import { DELETED_ENVIRONMENT_KEEP_DAYS, tombstoneEnvironment } from '../../db/queries/deleted-environments';
import { recordActivity } from '../../db/queries/activity';
import { environmentPage, lockEnvironment, lowestFreePort } from '../../db/queries/environments';
import { assertRecentSignIn, DELETE_PROTECTED_SIGN_IN_MINUTES } from '../lib/recent-sign-in';

export type EnvironmentRecord = Environment & { url: string };

/** Attaches the address to a loaded row (see findEnvironment in ./service). */
export function withUrl(config: Pick<Config, 'environmentHost'>, env: Environment): EnvironmentRecord {
  return Object.assign(env, { url: environmentUrl(config, env.port) });
}

const nameTaken = () =>
  appError('conflict', 'An environment of that name exists in this project', {
    fields: { name: 'is already used by another environment of this project' },
  });
const noRepository = () => appError('no_repository');

/** Loads an environment the caller may act on; another team's environment answers 404. */
export async function findEnvironment(
  deps: Deps,
  actor: Actor,
  id: string,
  action: Action,
): Promise<EnvironmentRecord> {
  const env = await Environment.query(deps.knex).findById(id);
  if (!env) throw errors.notFound('environment');
  await authorize(deps.knex, actor, env.team_id, action, 'environment');
  return withUrl(deps.config, env);
}

/** What creating an environment asks for: name rules and the repository's branches, or why nothing can be asked. */
export async function environmentChoices(deps: Deps, actor: Actor, projectId: string) {
  const { project } = await findProject(deps, actor, projectId, 'environment:create');
  if (!project.repository_url) {
    return {
      blocked: true,
      reason: 'no_repository',
      message: 'Connect a git repository to the project first',
    };
  }
  const remote = await lsRemote((await projectRepositoryOf(deps.knex, deps.secrets, project))!, deps.config);
  if (!remote.ok) {
    return {
      blocked: true,
      reason: 'repository_unreachable',
      message: `The repository cannot be read right now: ${remote.reason}`,
    };
  }
  const branches = branchesOf(remote.refs);
  if (branches.length === 0) {
    return { blocked: true, reason: 'no_branches', message: 'The repository has no branches yet; push a commit first' };
  }
  const taken = (
    await Environment.query(deps.knex).where({ project_id: projectId }).select('name').orderBy('name')
  ).map((e) => e.name);
  const defaultBranch = remote.head && branches.includes(remote.head) ? remote.head : branches[0];
  return {
    blocked: false,
    fields: {
      name: { ...NAME_RULES, unique_within: 'project', taken },
      git_ref: {
        required: true,
        branches,
        default: defaultBranch,
        description: 'a branch (or a tag or commit id) of the repository',
      },
      auto_deploy: { required: false, default: false },
    },
  };
}

/** 422 on git_ref unless the repository knows it; 409 when the repository cannot be read. */
async function checkRef(deps: Deps, repo: GitRepo, gitRef: string): Promise<void> {
  const remote = await lsRemote(repo, deps.config);
  if (!remote.ok) {
    throw appError(
      'repository_unreachable',
      `The repository cannot be read right now, so git_ref cannot be checked: ${remote.reason}`,
    );
  }
  if (!refExists(remote.refs, gitRef))
    throw errors.invalid({ git_ref: 'is not a branch, tag or commit id of the repository' });
}

/**
 * Creates an environment in the project on a port of its own: the lowest free one of the range,
 * retried when another creation took it meanwhile; 409 no_port_available when the range is spent.
 */
export async function createEnvironment(
  deps: Deps,
  actor: Actor,
  projectId: string,
  input: { name: string; git_ref: string; auto_deploy?: boolean },
) {
  const { project } = await findProject(deps, actor, projectId, 'environment:create');
  if (project.cancelled_at) throw appError('conflict', 'The project is cancelled: it takes no new environments');
  if (!project.repository_url) throw noRepository();
  if (await Environment.query(deps.knex).findOne({ project_id: projectId, name: input.name })) throw nameTaken();
  await checkRef(deps, (await projectRepositoryOf(deps.knex, deps.secrets, project))!, input.git_ref);
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await lowestFreePort(deps.knex, deps.config.environmentPorts.from, deps.config.environmentPorts.to);
    if (port === undefined) {
      throw appError(
        'no_port_available',
        'Every port of the range for environments is in use; delete an environment first',
      );
    }
    try {
      // The environment and its machines (a web server, a build machine) exist together or not at all.
      const env = await deps.knex.transaction(async (trx) => {
        const created = await Environment.query(trx).insertAndFetch({
          team_id: project.team_id,
          project_id: project.id,
          name: input.name,
          git_ref: input.git_ref,
          auto_deploy: input.auto_deploy ?? false,
          protected: input.name === 'production',
          port,
        } as Partial<Environment>);
        await createEnvironmentMachines(trx, deps, created);
        return created;
      });
      return withUrl(deps.config, env);
    } catch (err) {
      if (err instanceof UniqueViolationError) {
        if (err.columns?.includes('port') || err.constraint?.includes('port')) continue;
        throw nameTaken();
      }
      throw err;
    }
  }
  throw appError('no_port_available');
}

// ---- listing -----------------------------------------------------------------------------------

/** Environments of the reachable teams, newest first (created_at, id), a page at a time. */
const LIST_COLUMNS = [
  'id',
  'project_id',
  'team_id',
  'name',
  'git_ref',
  'auto_deploy',
  'port',
  'protected',
  'maintenance_on',
  'maintenance_note',
  'maintenance_since',
  'created_at',
];

export async function listEnvironments(
  deps: Deps,
  actor: Actor,
  query: { team_id?: string; project_id?: string; limit: number; before?: { at: string; id: string } },
) {
  let teamIds = await reachableTeamIds(deps.knex, actor);
  if (query.team_id) teamIds = teamIds.filter((id) => id === query.team_id);
  if (teamIds.length === 0) return { rows: [] as EnvironmentRecord[], next_before: null };
  // Plain rows of the columns the presenter shows (a page of 100 model instances costs more than the query).
  const rows = await environmentPage(deps.knex, LIST_COLUMNS, {
    teamIds,
    projectId: query.project_id,
    before: query.before,
    limit: query.limit + 1,
  });
  const { page, more } = pageOf(rows as Array<Environment & { cursor_at: string }>, query.limit);
  const last = page.at(-1);
  return {
    rows: page.map((row) => withUrl(deps.config, row)),
    next_before: more && last ? encodeCursor(ENVIRONMENTS_CURSOR, [last.cursor_at, last.id]) : null,
  };
}

// ---- changes -----------------------------------------------------------------------------------

export async function updateEnvironment(
  deps: Deps,
  actor: Actor,
  id: string,
  input: { git_ref?: string; auto_deploy?: boolean },
) {
  const env = await findEnvironment(deps, actor, id, 'environment:update');
  const patch: Partial<Environment> = {};
  if (input.git_ref !== undefined && input.git_ref !== env.git_ref) {
    const project = await Project.query(deps.knex).findById(env.project_id);
    if (!project?.repository_url) throw noRepository();
    await checkRef(deps, (await projectRepositoryOf(deps.knex, deps.secrets, project))!, input.git_ref);
    patch.git_ref = input.git_ref;
  }
  if (input.auto_deploy !== undefined) patch.auto_deploy = input.auto_deploy;
  if (Object.keys(patch).length === 0) return env;
  const updated = await Environment.query(deps.knex).patchAndFetchById(id, { ...patch, updated_at: new Date() });
  if (!updated) throw errors.notFound('environment');
  return withUrl(deps.config, updated);
}

/**
 * Deletes an environment, refused (409 deploy_in_progress) while one of its tasks is pending or running. A
 * protected one needs its name as `confirm` (422) and a recent sign-in (403 reauthentication_required). Its
 * tasks, activity and snapshots stay 30 days beside its tombstone (db/queries/deleted-environments.ts); the
 * deletion is an activity event.
 */
export async function deleteEnvironment(
  deps: Deps,
  actor: Actor,
  id: string,
  input: { confirm?: string },
  address: string,
): Promise<void> {
  const found = await findEnvironment(deps, actor, id, 'environment:delete');
  if (found.protected) {
    if (input.confirm !== found.name)
      throw errors.invalid({ confirm: `must be the environment's name (${found.name}): it is protected` });
    assertRecentSignIn(actor, DELETE_PROTECTED_SIGN_IN_MINUTES);
  }
  const gone = await deps.knex.transaction(async (trx) => {
    await lockEnvironment(trx, id);
    const running = await Task.query(trx)
      .where({ environment_id: id })
      .whereIn('status', ['pending', 'running'])
      .orderBy('seq')
      .first();
    if (running) {
      throw errors.conflict(
        'deploy_in_progress',
        'A task is pending or running on this environment; wait for it or cancel it first',
        { task_id: running.id },
      );
    }
    const out = await tombstoneEnvironment(trx, id, actor.user.id);
    if (!out) throw errors.notFound('environment');
    await recordActivity(trx, {
      teamId: found.team_id,
      actor,
      kind: 'configuration',
      type: 'environment_deleted',
      projectId: found.project_id,
      environmentId: id,
      address,
      summary: `Environment ${found.name} deleted${found.protected ? ' (protected)' : ''}; its tasks, activity and snapshots are kept ${DELETED_ENVIRONMENT_KEEP_DAYS} days`,
    });
    return out;
  });
  await dropEnvironmentServices(deps, id, gone.databases);
  await startRetire(deps, id, gone.port, gone.host);
}
