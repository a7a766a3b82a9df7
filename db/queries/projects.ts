/** What code outside the API reads and writes of `projects` (the API keeps its own queries in api/projects). */
import type { Knex } from 'knex';

/** A project as a task's announcement names it. */
interface ProjectNameRow {
  id: string;
  name: string;
}

/**
 * The columns git needs of a project: its repository URL and sealed credentials (core/repository.ts opens them),
 * and whether it is cancelled (auto-deploy looks at no cancelled project).
 */
interface ProjectRepositoryColumns {
  id: string;
  team_id: string;
  repository_url: string | null;
  repository_credentials: string | null;
  cancelled_at: Date | null;
}

/** The project's id and name, or undefined when it is gone. */
export async function projectName(knex: Knex, projectId: string): Promise<ProjectNameRow | undefined> {
  return knex('projects').where({ id: projectId }).first('id', 'name');
}

/** The project's repository columns, or undefined when it is gone. */
export async function projectRepositoryColumns(
  knex: Knex,
  projectId: string,
): Promise<ProjectRepositoryColumns | undefined> {
  return knex('projects')
    .where({ id: projectId })
    .first('id', 'team_id', 'repository_url', 'repository_credentials', 'cancelled_at');
}

/** Records whether git could read the project's repository just now (auto-deploy's `git ls-remote`). */
export async function recordRepositoryReachable(knex: Knex, projectId: string, reachable: boolean): Promise<void> {
  await knex('projects')
    .where({ id: projectId })
    .update({ repository_reachable: reachable, repository_checked_at: knex.fn.now() });
}
