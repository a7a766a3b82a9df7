import type { Deps } from '../../system/deps';
import { seal } from '../../system/crypto';
import { recordActivity } from '../../db/queries/activity';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { aad } from '../../db/aad';

/** A registry's credentials as kept: the password sealed. */
export interface RegistryRow {
  host: string;
  username: string;
  created_at: Date;
}

export async function listRegistries(deps: Deps, projectId: string) {
  const rows = await deps.knex('project_registries').where({ project_id: projectId }).orderBy('host');
  return rows as RegistryRow[];
}

/** Adds (or replaces) the credentials of one host; the password is sealed and never shown again. */
export async function saveRegistry(
  deps: Deps,
  actor: Actor,
  project: { id: string; team_id: string },
  body: { host: string; username: string; password: string },
) {
  const row = {
    project_id: project.id,
    host: body.host,
    username: body.username,
    sealed_password: seal(deps.secrets, body.password, aad.registry(project.id, body.host)),
  };
  const saved = await deps.knex.transaction(async (trx) => {
    const [r] = await trx('project_registries')
      .insert(row)
      .onConflict(['project_id', 'host'])
      .merge(['username', 'sealed_password'])
      .returning('*');
    await recordActivity(trx, {
      teamId: project.team_id,
      actor,
      kind: 'configuration',
      type: 'registry_saved',
      projectId: project.id,
      summary: `Registry ${body.host} saved (user ${body.username})`,
    });
    return r;
  });
  return saved as RegistryRow;
}

export async function deleteRegistry(deps: Deps, actor: Actor, project: { id: string; team_id: string }, host: string) {
  await deps.knex.transaction(async (trx) => {
    const n = await trx('project_registries').where({ project_id: project.id, host }).delete();
    if (!n) throw errors.notFound('registry');
    await recordActivity(trx, {
      teamId: project.team_id,
      actor,
      kind: 'configuration',
      type: 'registry_removed',
      projectId: project.id,
      summary: `Registry ${host} forgotten`,
    });
  });
}
