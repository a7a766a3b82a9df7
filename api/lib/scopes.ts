/**
 * Scopes: how a route finds the team of the resource its path names, so that the router enforces the
 * route's permission before anything else runs (api/lib/router.ts). A loader reads the resource by
 * `params.id` and returns it with its team; a missing resource answers 404. Add a loader here for a new
 * kind of resource (one query, by primary key).
 */
import type { Knex } from 'knex';

export interface ScopeRow {
  team_id: string;
}

export interface Scope<R extends ScopeRow = ScopeRow> {
  /** What the path names, for "No such <what>". */
  what: string;
  /** The path parameter holding the id (default `id`). */
  param?: string;
  load(knex: Knex, id: string): Promise<R | undefined>;
}

/** The scope of the request once the router has checked it. */
export interface ResolvedScope<R extends ScopeRow = ScopeRow> {
  teamId: string;
  role: import('../../db/vocabulary').Role;
  row: R;
}

const byId =
  (table: string) =>
  (knex: Knex, id: string): Promise<(ScopeRow & Record<string, any>) | undefined> =>
    knex(table).where({ id }).first();

export function defineScope<R extends ScopeRow>(
  what: string,
  load: (knex: Knex, id: string) => Promise<R | undefined>,
  param?: string,
): Scope<R> {
  return { what, load, param };
}

export const scopes = {
  team: defineScope('team', async (knex, id) => {
    const row = await knex('teams').where({ id }).first();
    return row ? { ...row, team_id: row.id } : undefined;
  }),
  project: defineScope('project', byId('projects')),
  environment: defineScope('environment', byId('environments')),
  task: defineScope('task', byId('tasks')),
  invitation: defineScope('invitation', byId('invitations')),
  membership: defineScope('membership', byId('memberships')),
  domain: defineScope('domain', byId('domains')),
  integration: defineScope('integration', byId('integrations')),
  ticket: defineScope('ticket', byId('tickets')),
  backupDestination: defineScope('backup destination', byId('backup_destinations')),
  repositoryHost: defineScope('repository host', byId('repository_hosts')),
};
