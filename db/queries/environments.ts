/**
 * The environments table's reads and writes for the API and core (activities/ keeps its own queries; the
 * edge's reads are in edge-settings.ts, the storage's in storage.ts, the deletion's in deleted-environments.ts).
 */
import type { Knex } from 'knex';
import type { Environment } from '../models/environment';
import { edgesHoldingOut } from './edge-routes';
import { cursorTimeSql } from '../cursor-sql';

type EnvironmentRow = Pick<
  Environment,
  | 'id'
  | 'team_id'
  | 'project_id'
  | 'name'
  | 'git_ref'
  | 'auto_deploy'
  | 'port'
  | 'live_release_id'
  | 'protected'
  | 'backup_key_sealed'
  | 'maintenance_on'
  | 'maintenance_note'
  | 'maintenance_since'
  | 'auto_deploy_sha'
  | 'auto_deploy_checked_at'
  | 'stopped_at'
  | 'created_at'
  | 'updated_at'
>;

export type EnvironmentWithProject = EnvironmentRow & { project_name: string; repository_url: string | null };

/** The environment with its project's name and repository: one query (the deploy routes' scope). */
export async function environmentWithProject(knex: Knex, id: string): Promise<EnvironmentWithProject | undefined> {
  return knex('environments')
    .join('projects', 'projects.id', 'environments.project_id')
    .where('environments.id', id)
    .first('environments.*', 'projects.name as project_name', 'projects.repository_url');
}

/** Whether the environment exists. */
export async function environmentExists(knex: Knex, id: string): Promise<boolean> {
  return Boolean(await knex('environments').where({ id }).first('id'));
}

/** The environment's id and project (undefined: no such environment). */
export async function environmentProject(
  knex: Knex,
  id: string,
): Promise<{ id: string; project_id: string } | undefined> {
  return knex('environments').where({ id }).first('id', 'project_id');
}

/** The environment's name (undefined: no such environment). */
export async function environmentName(knex: Knex, id: string): Promise<{ name: string } | undefined> {
  return knex('environments').where({ id }).first('name');
}

/** The environment of the project (undefined: no such environment there). */
export async function projectEnvironment(
  knex: Knex,
  id: string,
  projectId: string,
): Promise<{ id: string; name: string } | undefined> {
  return knex('environments').where({ id, project_id: projectId }).first('id', 'name');
}

/** The environment of one of the team's projects (undefined: not the team's). */
export async function teamEnvironment(
  knex: Knex,
  id: string,
  teamId: string,
): Promise<{ id: string; name: string } | undefined> {
  return knex('environments as e')
    .join('projects as p', 'p.id', 'e.project_id')
    .where({ 'e.id': id, 'p.team_id': teamId })
    .first('e.id', 'e.name');
}

/** Locks the environment's row for the rest of `trx` (before a deletion). */
export async function lockEnvironment(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('environments').where({ id }).forUpdate().first();
}

/** The lowest port of from..to no environment uses and every edge can listen on; undefined when none is left. */
export async function lowestFreePort(knex: Knex, from: number, to: number): Promise<number | undefined> {
  const row = await knex
    .select(knex.raw('min(p) as port'))
    .from(knex.raw('generate_series(?::int, ?::int) as p', [from, to]))
    .whereNotExists(knex('environments').where('port', knex.raw('p')))
    .whereNotExists(knex('retiring_ports').where('port', knex.raw('p')))
    // nor one that another program holds where an edge runs (that edge could not serve it)
    .whereNotExists(edgesHoldingOut(knex, knex.raw('p')))
    .first();
  return row?.port ?? undefined;
}

// ---- a project's environments ------------------------------------------------------------------

/** How many environments the project has, inside `trx`. */
export async function projectEnvironmentCount(trx: Knex.Transaction, projectId: string): Promise<number> {
  return Number(
    (
      (await trx('environments').where({ project_id: projectId }).count<{ n: string }[]>({ n: '*' }))[0] as {
        n: string;
      }
    ).n,
  );
}

/** The project's environments by name, with whether each is stopped (what cancelling stops). */
export async function projectEnvironmentsStopped(
  knex: Knex,
  projectId: string,
): Promise<Array<{ id: string; name: string; stopped_at: Date | null }>> {
  return knex('environments').where({ project_id: projectId }).orderBy('name').select('id', 'name', 'stopped_at');
}

/** Stops every environment of the project inside `trx` (its cancel); returns their ids. */
export async function stopProjectEnvironments(trx: Knex.Transaction, projectId: string): Promise<string[]> {
  return trx('environments')
    .where({ project_id: projectId })
    .update({ stopped_at: trx.fn.now() })
    .returning('id')
    .then((rows: Array<{ id: string }>) => rows.map((r) => r.id));
}

/** The project's environments with a live release, by name. */
export async function liveProjectEnvironments(knex: Knex, projectId: string): Promise<EnvironmentRow[]> {
  return knex('environments').where({ project_id: projectId }).whereNotNull('live_release_id').orderBy('name');
}

/** The project's environments other than `exceptId`, by name, with whether each has an available database service. */
export async function otherProjectEnvironments(
  knex: Knex,
  projectId: string,
  exceptId: string,
): Promise<Array<{ id: string; name: string; has_service: boolean }>> {
  return knex('environments as e')
    .where({ 'e.project_id': projectId })
    .whereNot({ 'e.id': exceptId })
    .orderBy('e.name')
    .select(
      'e.id',
      'e.name',
      knex.raw(
        `EXISTS (SELECT 1 FROM services s WHERE s.environment_id = e.id AND s.status = 'available') AS has_service`,
      ),
    );
}

/** The environments a variables scope reaches, inside `trx`: the project's, or the one environment. */
export async function scopeEnvironments(
  trx: Knex.Transaction,
  projectId: string,
  environmentId: string | null | undefined,
): Promise<Array<{ id: string; name: string }>> {
  return (await trx('environments')
    .where({ project_id: projectId })
    .modify((q) => (environmentId ? q.where({ id: environmentId }) : q))
    .select('id', 'name')) as Array<{ id: string; name: string }>;
}

// ---- cancelled projects ------------------------------------------------------------------------

/** The environments of projects cancelled before `before` (the daily prune deletes them). */
export async function environmentsCancelledBefore(
  knex: Knex,
  before: Date,
): Promise<Array<{ id: string; port: number }>> {
  return knex('environments')
    .join('projects', 'projects.id', 'environments.project_id')
    .where('projects.cancelled_at', '<', before)
    .select('environments.id', 'environments.port');
}

// ---- backup keys -------------------------------------------------------------------------------

/** The environment's sealed backup key: undefined when the environment does not exist, null when it has none. */
export async function environmentBackupKey(knex: Knex, id: string): Promise<string | null | undefined> {
  const row = await knex('environments').where({ id }).first('backup_key_sealed');
  return row ? ((row.backup_key_sealed as string | null) ?? null) : undefined;
}

/** Stores the sealed backup key unless the environment has one already (a concurrent first use keeps the first). */
export async function storeBackupKeyIfNone(knex: Knex, id: string, sealed: string): Promise<void> {
  await knex('environments').where({ id }).whereNull('backup_key_sealed').update({ backup_key_sealed: sealed });
}

// ---- auto-deploy -------------------------------------------------------------------------------

/** The project's running environments with auto_deploy on, by name. */
export async function autoDeployEnvironments(
  knex: Knex,
  projectId: string,
): Promise<Array<{ id: string; git_ref: string; auto_deploy_sha: string | null }>> {
  return knex('environments')
    .where({ project_id: projectId, auto_deploy: true })
    .whereNull('stopped_at')
    .orderBy('name')
    .select('id', 'git_ref', 'auto_deploy_sha');
}

/** The auto-deploy looked at the environment's git_ref now. */
export async function markAutoDeployChecked(knex: Knex, id: string): Promise<void> {
  await knex('environments').where({ id }).update({ auto_deploy_checked_at: knex.fn.now() });
}

/** The commit an auto-deploy was started for. */
export async function setAutoDeploySha(knex: Knex, id: string, sha: string): Promise<void> {
  await knex('environments').where({ id }).update({ auto_deploy_sha: sha });
}

/** Every project not cancelled, with a repository, that has a running environment with auto_deploy on. */
export async function autoDeployProjectIds(knex: Knex): Promise<string[]> {
  return knex('environments')
    .join('projects', 'projects.id', 'environments.project_id')
    .where('environments.auto_deploy', true)
    .whereNull('environments.stopped_at')
    .whereNull('projects.cancelled_at')
    .whereNotNull('projects.repository_url')
    .distinct('environments.project_id')
    .pluck('environments.project_id');
}

/**
 * A page of the teams' environments (of one project, when given), newest first, before the cursor `before`:
 * `columns` and `cursor_at` (the created_at text a time cursor carries), at most `limit` rows.
 */
export async function environmentPage(
  knex: Knex,
  columns: readonly string[],
  o: { teamIds: string[]; projectId?: string; before?: { at: string; id: string }; limit: number },
): Promise<Array<Partial<Environment> & { cursor_at: string }>> {
  const q = knex('environments')
    .select(...columns, knex.raw(`${cursorTimeSql('created_at')} as cursor_at`))
    .whereIn('team_id', o.teamIds)
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(o.limit);
  if (o.projectId) q.where('project_id', o.projectId);
  if (o.before) q.whereRaw('(created_at, id) < (?::timestamptz, ?::uuid)', [o.before.at, o.before.id]);
  return q;
}
