/**
 * The data area's tasks, started through the task platform (core/tasks.ts): backup (not exclusive),
 * restore, sync and reset-database (exclusive: one change at a time per environment).
 */
import { volumeHasFiles, volumeReading } from '../../db/queries/storage';
import { otherProjectEnvironments, projectEnvironment } from '../../db/queries/environments';
import { hasAvailableService, hasPostgresqlService } from '../../db/queries/services';
import type { Deps } from '../../system/deps';
import { startTask } from '../../core/tasks';
import type { TaskParamsInput } from '../../db/task-params';
import { startBackupTask } from '../../core/backups/tasks';
import { errors } from '../../core/errors';
import { BackupWindow } from '../../db/models/backup-window';
import { BackupDestination } from '../../db/models/backup-destination';
import type { Environment } from '../../db/models/environment';
import type { Actor } from '../../core/actor';
import { verifyPassword } from '../../core/passwords';
import { availableSnapshot } from './service';
import {
  assertDestinationReachable,
  destinationRefusal,
  recordDestinationError,
} from '../../core/backups/destinations';
import { startVerifyTask } from '../../core/backups/drills';

type EnvRow = Pick<Environment, 'id' | 'team_id' | 'project_id' | 'name'>;

/** POST /environments/{id}/backups: to the given destination, else the backup window's (none: 422). */
export async function requestBackup(deps: Deps, actor: Actor, env: EnvRow, input: { destination_id?: string }) {
  let destinationId = input.destination_id;
  if (!destinationId) {
    destinationId = (await BackupWindow.query(deps.knex).findById(env.project_id))?.destination_id ?? undefined;
    if (!destinationId)
      throw errors.invalid({ destination_id: 'is required: the project has no backup window with a destination' });
  }
  const destination = await BackupDestination.query(deps.knex).findById(destinationId);
  if (!destination || destination.team_id !== env.team_id)
    throw errors.invalid({ destination_id: "is not a backup destination of the environment's team" });
  await assertDestinationReachable(deps, env.id, destination, `No backup of ${env.name}`);
  const refusal = await destinationRefusal(deps, destination);
  if (refusal) {
    await recordDestinationError(deps.knex, destination.id, refusal);
    throw errors.invalid({ destination_id: refusal });
  }
  return startBackupTask(deps, actor, env, destinationId, 'manual');
}

/**
 * Over a protected environment: the caller's password again (a wrong one counts as a failed credential for
 * the address guard) and a sign-in younger than the re-authentication window.
 */
export async function assertMayOverwrite(
  deps: Deps,
  actor: Actor,
  env: Pick<Environment, 'protected'>,
  password: string | undefined,
  address: string,
) {
  if (!env.protected) return;
  if (actor.kind !== 'session') throw errors.tokenNotAllowed();
  const recent = Date.now() - actor.session.authenticated_at.getTime() <= RECENT_SIGN_IN_MINUTES * 60_000;
  // each refusal says what is missing: the password in the body, a recent sign-in, or the right password
  if (password === undefined)
    throw errors.reauthenticationRequired(
      'This environment is protected: send your password as `password` in the body with this change',
    );
  if (!recent)
    throw errors.reauthenticationRequired(
      `This change needs a sign-in of the last ${RECENT_SIGN_IN_MINUTES} minutes: confirm your password (POST /session/reauthenticate), then repeat the change with it`,
    );
  await deps.guards.assertAddressAllowed(address);
  if (!(await verifyPassword(actor.user.password_hash, password))) {
    await deps.guards.recordFailure(address);
    throw errors.reauthenticationRequired('That is not your password: repeat the change with your own as `password`');
  }
}
export const RECENT_SIGN_IN_MINUTES = 60;

/** A restore, sync or reset-database task: its type, params and summary. */
type OverwriteTask = {
  [T in 'restore' | 'sync' | 'reset_database']: { type: T; params: TaskParamsInput<T>; summary: string };
}['restore' | 'sync' | 'reset_database'];

/**
 * Restore, sync and reset-database: each replaces the environment's data, so each passes the protected
 * environment's check (assertMayOverwrite) before its exclusive task starts; answers the task as the route does.
 */
async function startOverwrite(
  deps: Deps,
  actor: Actor,
  env: EnvRow & Pick<Environment, 'protected'>,
  password: string | undefined,
  address: string,
  task: OverwriteTask,
) {
  await assertMayOverwrite(deps, actor, env, password, address);
  return startTask(deps, actor, {
    ...task,
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
  });
}

export async function requestRestore(
  deps: Deps,
  actor: Actor,
  env: EnvRow & Pick<Environment, 'protected'>,
  snapshotId: string,
  input: { password?: string },
  address: string,
) {
  // its own snapshot, or one a deleted environment of the project left (kept 30 days)
  const { row, destination } = await availableSnapshot(deps, env, snapshotId, true);
  await assertDestinationReachable(deps, env.id, destination, `No restore of ${env.name} from snapshot ${row.id}`);
  const from = row.environment_id === env.id ? '' : ` of deleted environment ${row.environment_id}`;
  return startOverwrite(deps, actor, env, input.password, address, {
    type: 'restore',
    params: { backup_id: row.id },
    summary: `Restore of ${env.name} from snapshot ${row.id}${from}`,
  });
}

/**
 * POST /environments/{id}/backups/{snapshot}/verify: a restore drill of one of the environment's available
 * snapshots (it changes nothing of the environment, so it is neither exclusive nor guarded like a restore).
 */
export async function requestVerify(deps: Deps, actor: Actor, env: EnvRow, snapshotId: string) {
  const { row } = await availableSnapshot(deps, env, snapshotId);
  return startVerifyTask(deps, actor, env, row.id);
}

/**
 * Whether the environment's volume holds files: looked at here when it is on this machine's host, else as its own
 * host's sampler last recorded it (no disk is shared between hosts).
 */
async function holdsFiles(deps: Deps, envId: string): Promise<boolean> {
  const volume = await volumeReading(deps.knex, deps.config.hostName, envId);
  if (volume.here) return volumeHasFiles(deps.knex, deps.config.storageRoots, envId);
  return (volume.sampledBytes ?? 0) > 0;
}

/** The project's other environments with data (a database service or files). */
export async function syncSources(deps: Deps, env: EnvRow) {
  const rows = await otherProjectEnvironments(deps.knex, env.project_id, env.id);
  const withData = [];
  for (const r of rows) {
    if (r.has_service || (await holdsFiles(deps, r.id))) withData.push(r);
  }
  return { sources: withData.map((r) => ({ environment_id: r.id, name: r.name })) };
}

export async function requestSync(
  deps: Deps,
  actor: Actor,
  env: EnvRow & Pick<Environment, 'protected'>,
  input: { from_environment_id: string; confirm?: boolean; password?: string },
  address: string,
) {
  if (input.confirm !== true)
    throw errors.invalid({ confirm: "must be true: the environment's data is replaced by the other's" });
  const from = await projectEnvironment(deps.knex, input.from_environment_id, env.project_id);
  if (!from || from.id === env.id)
    throw errors.invalid({ from_environment_id: 'is not another environment of the project' });
  // its database has nowhere to go: said now, not by a task that fails
  if ((await hasPostgresqlService(deps.knex, from.id)) && !(await hasPostgresqlService(deps.knex, env.id)))
    throw errors.invalid(
      {
        from_environment_id: `has a database and ${env.name} has none: add a PostgreSQL service to ${env.name} first`,
      },
      `No sync of ${env.name} from ${from.name}`,
    );
  return startOverwrite(deps, actor, env, input.password, address, {
    type: 'sync',
    params: { from_environment_id: from.id },
    summary: `Sync of ${env.name} from ${from.name}`,
  });
}

export async function requestResetDatabase(
  deps: Deps,
  actor: Actor,
  env: EnvRow & Pick<Environment, 'protected'>,
  input: { confirm?: string; password?: string },
  address: string,
) {
  if (input.confirm !== env.name) throw errors.invalid({ confirm: `must be the environment's name (${env.name})` });
  if (!(await hasAvailableService(deps.knex, env.id)))
    throw errors.conflict('no_database_service', 'The environment has no database service to reset');
  return startOverwrite(deps, actor, env, input.password, address, {
    type: 'reset_database',
    params: {},
    summary: `Reset of the database of ${env.name}`,
  });
}
