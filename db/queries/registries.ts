/** Binds a sealed registry password to its project and host (api/registries, activities/deploys/registry-auth). */
import type { Knex } from 'knex';

interface ProjectRegistryRow {
  project_id: string;
  host: string;
  username: string;
  /** Sealed with aad.registry(project id, host). */
  sealed_password: string;
  created_at: Date;
}

/** The project's registry credentials, by host. */
export async function projectRegistries(knex: Knex, projectId: string): Promise<ProjectRegistryRow[]> {
  return knex('project_registries').where({ project_id: projectId }).orderBy('host');
}
