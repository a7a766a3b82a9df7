/**
 * A project's repository as git is given it: the URL (kept without credentials) and the credentials,
 * kept sealed in their own column (system/crypto.ts, bound to the project) and opened only here, for the
 * git call that needs them. Every place that runs git for a project gets its repository from here.
 */
import type { Knex } from 'knex';
import type { Credentials, GitRepo } from '../host/git-remote';
import { open, seal } from '../system/crypto';
import type { Secrets } from '../system/secrets';
import { withHostCredentials } from './repository-hosts';
import { aad } from '../db/aad';
import { projectRepositoryColumns } from '../db/queries/projects';

interface ProjectRepositoryRow {
  id: string;
  team_id: string;
  repository_url: string | null;
  repository_credentials?: string | null;
}

type Keys = Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;

export function sealCredentials(secrets: Keys, projectId: string, credentials: Credentials): string {
  return seal(
    secrets,
    JSON.stringify({ username: credentials.username, password: credentials.password }),
    aad.repositoryCredentials(projectId),
  );
}

/**
 * The repository of a loaded project row with the credentials git uses: the project's own, else its
 * team's repository host for that URL (core/repository-hosts.ts); null when none is connected.
 */
export async function projectRepositoryOf(knex: Knex, secrets: Keys, project: ProjectRepositoryRow) {
  const repo = repositoryOf(secrets, project);
  return repo ? withHostCredentials(knex, secrets, project.team_id, repo) : null;
}

/** The repository of a loaded project row, its own credentials opened; null when none is connected. */
export function repositoryOf(secrets: Keys, project: ProjectRepositoryRow): GitRepo | null {
  if (!project.repository_url) return null;
  const credentials = project.repository_credentials
    ? (JSON.parse(open(secrets, project.repository_credentials, aad.repositoryCredentials(project.id))) as Credentials)
    : null;
  return { url: project.repository_url, credentials, scope: project.id };
}

/** The repository of a project by id (null when the project has none or is gone). */
export async function projectRepository(knex: Knex, secrets: Keys, projectId: string): Promise<GitRepo | null> {
  const row = await projectRepositoryColumns(knex, projectId);
  return row ? projectRepositoryOf(knex, secrets, row) : null;
}
