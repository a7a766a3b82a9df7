/**
 * Project settings (CONTRACT "Projects: the rest"): POST changes only the fields it is given and answers
 * the whole settings. `domain_allowance` null goes back to the DOMAIN_ALLOWANCE default.
 */
import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { recordActivity } from '../../db/queries/activity';

export interface ProjectSettingsRow {
  id: string;
  team_id: string;
  name: string;
  domain_allowance: number | null;
}

export async function getSettings(deps: Deps, projectId: string) {
  const p = await deps.knex('projects').where({ id: projectId }).first();
  if (!p) throw errors.notFound('project');
  return p as ProjectSettingsRow;
}

export async function updateSettings(
  deps: Deps,
  actor: Actor,
  projectId: string,
  input: { name?: string; domain_allowance?: number | null },
) {
  const patch: Record<string, unknown> = {};
  if (input.name !== undefined) patch.name = input.name;
  if (input.domain_allowance !== undefined) patch.domain_allowance = input.domain_allowance;
  try {
    const row = await deps.knex.transaction(async (trx) => {
      const [updated] = await trx('projects')
        .where({ id: projectId })
        .update({ ...patch, updated_at: trx.fn.now() })
        .returning('*');
      if (!updated) throw errors.notFound('project');
      await recordActivity(trx, {
        teamId: updated.team_id,
        actor,
        kind: 'configuration',
        type: 'project_settings_changed',
        projectId,
        summary: `changed ${Object.keys(patch).join(', ')} of project ${updated.name}`,
      });
      return updated as ProjectSettingsRow;
    });
    return row;
  } catch (err) {
    if (err instanceof UniqueViolationError || (err as { code?: string }).code === '23505') {
      throw appError('conflict', 'A project of that name exists in this team', {
        fields: { name: 'is already used by another project in this team' },
      });
    }
    throw err;
  }
}
