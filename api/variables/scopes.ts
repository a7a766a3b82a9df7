import type { Scope } from './service';

/** The project's own variables; `row` is what the router's project scope loaded (api/lib/scopes.ts). */
export function projectScope(row: { id: string; team_id: string }): Scope {
  return { teamId: row.team_id, projectId: row.id, environmentId: null };
}

/** The environment's own variables; `row` is what the router's environment scope loaded. */
export function environmentScope(row: { id: string; team_id: string; project_id: string }): Scope {
  return { teamId: row.team_id, projectId: row.project_id, environmentId: row.id };
}
