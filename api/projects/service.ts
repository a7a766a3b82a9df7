import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { Project } from '../../db/models/project';
import { Team } from '../../db/models/team';
import { projectEnvironmentCount } from '../../db/queries/environments';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { authorize, can, reachableMemberships, reachableTeamIds, type Action } from '../lib/policy';
import { parseRepositoryUrl } from '../../host/git-remote';
import { sealCredentials } from '../../core/repository';
import { lsRemote } from '../../core/ls-remote';
import { withHostCredentials } from '../../core/repository-hosts';
import { newWebhookSecret, type RepositoryRow } from './repository-service';
import { NAME_RULES } from './schemas';

const nameTaken = () =>
  appError('conflict', 'A project of that name exists in this team', {
    fields: { name: 'is already used by another project in this team' },
  });

/** Loads a project the caller may act on; another team's project answers 404. */
export async function findProject(deps: Deps, actor: Actor, id: string, action: Action) {
  const project = await Project.query(deps.knex).findById(id);
  if (!project) throw errors.notFound('project');
  const role = await authorize(deps.knex, actor, project.team_id, action, 'project');
  return { project, role };
}

export async function listProjects(deps: Deps, actor: Actor, query: { team_id?: string }) {
  let teamIds = await reachableTeamIds(deps.knex, actor);
  if (query.team_id) teamIds = teamIds.filter((id) => id === query.team_id);
  if (teamIds.length === 0) return [];
  const projects = await Project.query(deps.knex)
    .whereIn('team_id', teamIds)
    .orderBy([{ column: 'name' }, { column: 'id' }]);
  return projects;
}

/** The teams the caller may create projects in, and the name rules; blocked when there is none. */
export async function newProjectChoices(deps: Deps, actor: Actor) {
  const memberships = (await reachableMemberships(deps.knex, actor)).filter((m) => can(m.role, 'project:create'));
  const teams = memberships.length
    ? await Team.query(deps.knex)
        .whereIn(
          'id',
          memberships.map((m) => m.team_id),
        )
        .orderBy([{ column: 'name' }, { column: 'id' }])
    : [];
  const fields = { team_id: { required: true }, name: { ...NAME_RULES, unique_within: 'team' } };
  const choices = teams.map((t) => ({ id: t.id, name: t.name }));
  if (choices.length === 0) {
    return {
      blocked: true,
      reason: 'no_team',
      message: 'You are not an owner or admin of any team; create a team first (POST /teams) or ask an admin',
      teams: choices,
      fields,
    };
  }
  return { blocked: false, teams: choices, fields };
}

export async function createProject(deps: Deps, actor: Actor, input: { team_id: string; name: string }) {
  await authorize(deps.knex, actor, input.team_id, 'project:create', 'team');
  const taken = await Project.query(deps.knex).findOne({ team_id: input.team_id, name: input.name });
  if (taken) throw nameTaken();
  try {
    const project = await Project.query(deps.knex).insertAndFetch({
      team_id: input.team_id,
      name: input.name,
      repository_url: null,
    } as Partial<Project>);
    return project;
  } catch (err) {
    if (err instanceof UniqueViolationError) throw nameTaken();
    throw err;
  }
}

/**
 * Deletes a project that has no environments (409 project_not_empty otherwise). Its deleted environments'
 * tombstones and snapshot rows go with it; their snapshots' objects are queued for the daily prune to delete
 * from their destinations (db/migrations/580_snapshot_object_deletions.ts), so nothing stays there unreadable.
 */
export async function deleteProject(deps: Deps, actor: Actor, id: string): Promise<void> {
  await findProject(deps, actor, id, 'project:delete');
  await deps.knex.transaction(async (trx) => {
    await trx('projects').where({ id }).forUpdate().first();
    const envs = await projectEnvironmentCount(trx, id);
    if (envs > 0) {
      throw errors.conflict(
        'project_not_empty',
        `The project still has ${envs} environment${envs === 1 ? '' : 's'}; delete them first`,
        { environments: envs },
      );
    }
    await trx.raw(
      `INSERT INTO snapshot_object_deletions (destination_id, object_key)
       SELECT destination_id, object_key FROM backups
        WHERE project_id = ? AND destination_id IS NOT NULL AND object_key IS NOT NULL
       ON CONFLICT (destination_id, object_key) DO NOTHING`,
      [id],
    );
    await trx('projects').where({ id }).delete();
  });
}

/**
 * Connects a git repository (CONTRACT "Teams, projects, environments"): an http(s), ssh or git:// URL,
 * scp-style address, or a local path / file:// URL under LOCAL_REPOSITORY_ROOTS. It is checked with
 * `git ls-remote` first (20 s), through the location rules and the outbound guard; a repository that
 * cannot be read is refused with 422 on url and nothing changes. Credentials in the URL are split off and
 * kept sealed apart from it; the URL is kept without them. A new webhook secret is made and shown in this
 * answer only (api/projects/repository-service.ts).
 */
export async function connectRepository(deps: Deps, actor: Actor, id: string, input: { url: string }) {
  const { project: current } = await findProject(deps, actor, id, 'project:update');
  const parsed = parseRepositoryUrl(input.url);
  if (!parsed.ok) throw errors.invalid({ url: parsed.reason });
  const own = { url: parsed.url, credentials: parsed.credentials, scope: id };
  const check = await lsRemote(await withHostCredentials(deps.knex, deps.secrets, current.team_id, own), deps.config);
  if (!check.ok) throw errors.invalid({ url: check.fieldReason });
  const webhook = newWebhookSecret(deps, id);
  const [row] = await deps
    .knex('projects')
    .where({ id })
    .update({
      repository_url: parsed.url,
      repository_credentials: parsed.credentials ? sealCredentials(deps.secrets, id, parsed.credentials) : null,
      repository_reachable: true,
      repository_default_branch: check.head ?? null,
      repository_checked_at: deps.knex.fn.now(),
      webhook_secret: webhook.sealed,
      updated_at: deps.knex.fn.now(),
    })
    .returning('*');
  if (!row) throw errors.notFound('project');
  return { ...(row as RepositoryRow), webhook_secret_shown: webhook.secret };
}
