/**
 * Which release a redeploy or a rollback puts live (shared by the API, to refuse early, and the activities), and
 * the deploy and build activities' reads and writes of a release: created `building` for a task, then ready or
 * failed, its archive in the release store.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

export interface ReleaseRow {
  id: string;
  team_id: string;
  project_id: string;
  environment_id: string;
  git_ref: string;
  commit_sha: string;
  commit_message?: string | null;
  status: 'building' | 'ready' | 'failed';
  task_id: string | null;
  /** The archive's digest in the release store (null: not there). */
  archive_sha256?: string | null;
  archive_bytes?: number | string | null;
  /** What its service.yaml said about serving (null: built before this was recorded). */
  serving?: ReleaseServing | null;
}

/** The web command and health path of a release's service.yaml, each null when it names none. */
interface ReleaseServing {
  web: string | null;
  health: string | null;
}

/** The live release of the environment (redeploy), or undefined. */
export async function liveRelease(knex: Knex, environmentId: string): Promise<ReleaseRow | undefined> {
  const env = await knex('environments').where({ id: environmentId }).first('live_release_id');
  if (!env?.live_release_id) return undefined;
  return knex('releases').where({ id: env.live_release_id, status: 'ready' }).first();
}

/**
 * The release that ran before the last successful deployment (deployments ordered by went_live_at): the
 * newest earlier deployment whose release differs from the last one's. Undefined when there is none.
 */
export async function rollbackTarget(knex: Knex, environmentId: string): Promise<ReleaseRow | undefined> {
  const last = await knex('deployments')
    .where({ environment_id: environmentId })
    .orderBy([
      { column: 'went_live_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .first('release_id', 'went_live_at');
  if (!last) return undefined;
  return knex('releases as r')
    .join('deployments as d', 'd.release_id', 'r.id')
    .where('d.environment_id', environmentId)
    .andWhere('d.went_live_at', '<=', last.went_live_at)
    .andWhereNot('d.release_id', last.release_id)
    .andWhere('r.status', 'ready')
    .orderBy('d.went_live_at', 'desc')
    .first('r.*');
}

/** The deployment that last put the release live on the environment (its task and when), or undefined. */
export async function lastWentLive(
  knex: Knex,
  environmentId: string,
  releaseId: string,
): Promise<{ task_id: string | null; went_live_at: Date } | undefined> {
  return knex('deployments')
    .where({ environment_id: environmentId, release_id: releaseId })
    .orderBy([
      { column: 'went_live_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .first('task_id', 'went_live_at');
}

/** Records the release's archive in the release store (its digest and size). */
export async function recordReleaseArchive(
  knex: Knex,
  releaseId: string,
  archive: { sha256: string; bytes: number },
): Promise<void> {
  await knex('releases')
    .where({ id: releaseId })
    .update({ archive_sha256: archive.sha256, archive_bytes: archive.bytes });
}

/**
 * The releases of the environment whose archives the store no longer keeps (RELEASE_KEEP): those with an
 * archive but the live one and the `keep` newest.
 */
export async function releasesPastKeep(knex: Knex, environmentId: string, keep: number): Promise<string[]> {
  const env = await knex('environments').where({ id: environmentId }).first('live_release_id');
  const rows: Array<{ id: string }> = await knex('releases')
    .where({ environment_id: environmentId })
    .whereNotNull('archive_sha256')
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .offset(keep)
    .select('id');
  return rows.map((r) => r.id).filter((id) => id !== env?.live_release_id);
}

/** The release's archive is gone from the store (pruned): a host without it builds it again. */
export async function forgetReleaseArchive(knex: Knex, releaseId: string): Promise<void> {
  await knex('releases').where({ id: releaseId }).update({ archive_sha256: null, archive_bytes: null });
}

/** The release's row, or undefined when it is gone. */
export async function releaseById(knex: Knex, releaseId: string): Promise<ReleaseRow | undefined> {
  return knex('releases').where({ id: releaseId }).first();
}

/** The digest of the release's archive recorded in the release store (null or undefined: not there). */
export async function releaseArchiveDigest(knex: Knex, releaseId: string): Promise<string | null | undefined> {
  const row = await knex('releases').where({ id: releaseId }).first('archive_sha256');
  return row?.archive_sha256;
}

/** The newest-built ready release of the environment for this commit (its id), or undefined. */
export async function readyReleaseOf(knex: Knex, environmentId: string, sha: string): Promise<string | undefined> {
  const ready = await knex('releases')
    .where({ environment_id: environmentId, commit_sha: sha, status: 'ready' })
    .orderBy('built_at', 'desc')
    .first('id');
  return ready?.id;
}

/**
 * The release this task creates: a new `building` one, unless the task created one already (a retry); either
 * way the task's release as it is now.
 */
export async function taskRelease(
  knex: Knex,
  input: { taskId: string; teamId: string; projectId: string; environmentId: string; gitRef: string; sha: string },
): Promise<Pick<ReleaseRow, 'id' | 'status'> | undefined> {
  // Only while the task is pending or running: a task cancelled meanwhile begins no release (its cancel fails
  // the one it began: db/queries/tasks.ts). The task row's share lock orders this with a cancel in flight.
  await knex.raw(
    `INSERT INTO releases (id, team_id, project_id, environment_id, git_ref, commit_sha, status, task_id)
     SELECT ?, ?, ?, ?, ?, ?, 'building', ?
     WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ? AND status IN ('pending', 'running') FOR SHARE)
     ON CONFLICT (task_id) WHERE task_id IS NOT NULL DO NOTHING`,
    [
      randomUUID(),
      input.teamId,
      input.projectId,
      input.environmentId,
      input.gitRef,
      input.sha,
      input.taskId,
      input.taskId,
    ],
  );
  return knex('releases').where({ task_id: input.taskId }).first('id', 'status');
}

/** The build of the release failed. */
export async function failRelease(knex: Knex, releaseId: string): Promise<void> {
  await knex('releases').where({ id: releaseId }).update({ status: 'failed' });
}

/** A release the task began building and did not finish is not going to be: it failed. */
export async function failTaskBuildingRelease(knex: Knex, taskId: string): Promise<void> {
  await knex('releases').where({ task_id: taskId, status: 'building' }).update({ status: 'failed' });
}

/**
 * The release is built: ready, its built_at kept when it had one, its commit's subject and what its service.yaml said
 * about serving recorded.
 */
export async function releaseBuilt(
  knex: Knex,
  releaseId: string,
  commitMessage: string | null,
  serving: ReleaseServing,
): Promise<void> {
  await knex('releases')
    .where({ id: releaseId })
    .update({
      status: 'ready',
      built_at: knex.raw('COALESCE(built_at, now())'),
      commit_message: commitMessage,
      serving: JSON.stringify(serving),
    });
}
