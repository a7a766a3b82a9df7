/**
 * Scopes: how a route finds the team of the resource its path names, so that the router enforces the
 * route's permission before anything else runs (api/lib/router.ts). A loader reads the resource by
 * `params.id` and returns it with its team; a missing resource answers 404. Add a loader here for a new
 * kind of resource (one query, by primary key).
 */
import type { Knex } from 'knex';
import type { Model, ModelObject } from 'objection';
import type { BackupDestination } from '../../db/models/backup-destination';
import type { Domain } from '../../db/models/domain';
import type { Environment } from '../../db/models/environment';
import type { Integration } from '../../db/models/integration';
import type { Invitation } from '../../db/models/invitation';
import type { Membership } from '../../db/models/membership';
import type { Project } from '../../db/models/project';
import type { RepositoryHost } from '../../db/models/repository-host';
import type { Task } from '../../db/models/task';
import type { Team } from '../../db/models/team';
import type { Ticket } from '../../db/models/ticket';

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

/** A row of `table` by primary key, typed as its model's columns (a plain row, not a model instance). */
const byId =
  <M extends Model & ScopeRow>(table: string) =>
  (knex: Knex, id: string): Promise<ModelObject<M> | undefined> =>
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
    const row: ModelObject<Team> | undefined = await knex('teams').where({ id }).first();
    return row ? { ...row, team_id: row.id } : undefined;
  }),
  project: defineScope('project', byId<Project>('projects')),
  environment: defineScope('environment', byId<Environment>('environments')),
  task: defineScope('task', byId<Task>('tasks')),
  invitation: defineScope('invitation', byId<Invitation>('invitations')),
  membership: defineScope('membership', byId<Membership>('memberships')),
  domain: defineScope('domain', byId<Domain>('domains')),
  integration: defineScope('integration', byId<Integration>('integrations')),
  ticket: defineScope('ticket', byId<Ticket>('tickets')),
  backupDestination: defineScope('backup destination', byId<BackupDestination>('backup_destinations')),
  repositoryHost: defineScope('repository host', byId<RepositoryHost>('repository_hosts')),
};
