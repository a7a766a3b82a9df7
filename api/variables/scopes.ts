import type { Deps } from '../../system/deps';
import type { Actor } from '../lib/actor';
import type { Action } from '../lib/policy';
import { findEnvironment } from '../environments/service';
import { findProject } from '../projects/service';
import type { Scope } from './service';

/** The project's own variables, for a caller allowed `action` in its team (another team's: 404). */
export async function projectScope(deps: Deps, actor: Actor, projectId: string, action: Action): Promise<Scope> {
  const { project } = await findProject(deps, actor, projectId, action);
  return { teamId: project.team_id, projectId: project.id, environmentId: null };
}

/** The environment's own variables, for a caller allowed `action` in its team (another team's: 404). */
export async function environmentScope(deps: Deps, actor: Actor, environmentId: string, action: Action): Promise<Scope> {
  const env = await findEnvironment(deps, actor, environmentId, action);
  return { teamId: env.team_id, projectId: env.project_id, environmentId: env.id };
}
