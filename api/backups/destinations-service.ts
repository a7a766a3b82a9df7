/**
 * Backup destinations of a team: created and changed only after a probe object was written, read and deleted
 * there (422 naming the field at fault otherwise). Secret fields are sealed at rest and never shown.
 */
import { randomUUID } from 'node:crypto';
import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { seal } from '../../system/crypto';
import { BackupDestination } from '../../db/models/backup-destination';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { DESTINATION_KINDS, probeStoreFault, type DestinationSpec } from '../../host/destinations';
import {
  destinationRefusal,
  destinationSpec,
  lockLocalClaims,
  otherTeamsOverlap,
} from '../../core/backups/destinations';
import { checkLocalDestination, LOCAL_NOT_ENABLED, localDestinationsEnabled } from '../../host/local-destination';
import type { CreateDestination, UpdateDestination } from './schemas';
import { recordBackupsEvent } from './events';
import { aad } from '../../db/aad';
import { destinationUsage } from '../../db/queries/backups';

export const SECRET_FIELDS = ['access_key_id', 'secret_access_key'] as const;
const FIELDS: Record<'local' | 's3', readonly string[]> = {
  local: ['path'],
  s3: ['endpoint', 'region', 'bucket', 'prefix', ...SECRET_FIELDS],
};

/** The kinds that may be added: `local` only when the operator set BACKUP_LOCAL_ROOTS. */
export function destinationKinds(deps: Pick<Deps, 'config'>) {
  return {
    kinds: DESTINATION_KINDS.filter((k) => k.kind !== 'local' || localDestinationsEnabled(deps.config)).map((k) => ({
      kind: k.kind,
      fields: k.fields.map((f) => ({ ...f })),
    })),
  };
}

/** A destination with what its presenter shows beside it: its snapshots, the bytes they use, and why it is refused. */
export interface DestinationRecord {
  row: BackupDestination;
  snapshots: number;
  used_bytes: number;
  refusal: string | null;
}

async function withUsage(deps: Deps, row: BackupDestination): Promise<DestinationRecord> {
  const usage = await destinationUsage(deps.knex, row.id);
  return {
    row,
    snapshots: usage.snapshots,
    used_bytes: Number(usage.used),
    refusal: (await destinationRefusal(deps, row)) ?? row.last_error ?? null,
  };
}

/** The real path of a local destination, or 422 on `path` (CONTRACT "Backups"; host/local-destination.ts). */
async function checkLocalPath(deps: Deps, p: string): Promise<string> {
  const checked = await checkLocalDestination(deps, p);
  if (checked.refusal === LOCAL_NOT_ENABLED) throw errors.invalid({ kind: LOCAL_NOT_ENABLED });
  if (checked.refusal !== null) throw errors.invalid({ path: checked.refusal });
  return checked.real;
}

/**
 * A local directory must not lie inside, contain or equal another team's (core/backups/destinations.ts): 422 on
 * `path`. Checked before the probe, and again under the claims' lock in the transaction that saves it.
 */
async function checkOtherTeams(
  knex: Deps['knex'],
  teamId: string,
  realPath: string,
  existing?: Pick<BackupDestination, 'id' | 'created_at'>,
  lock = false,
): Promise<void> {
  if (lock) await lockLocalClaims(knex);
  const overlap = await otherTeamsOverlap(knex, teamId, realPath, existing);
  if (overlap) throw errors.invalid({ path: overlap });
}

/** Probes the store; a failure is a 422 on the fields it points at (host/destinations.ts). */
async function probe(deps: Deps, spec: DestinationSpec): Promise<void> {
  const fault = await probeStoreFault(spec, deps.config);
  if (!fault) return;
  const fields = spec.kind === 'local' ? ['path'] : fault.fields;
  throw errors.invalid(
    Object.fromEntries(fields.map((f) => [f, `the probe (write, read, delete) failed: ${fault.reason}`])),
    'The destination could not be written, read and cleaned up',
  );
}

/** The destination the route's scope found (in the caller's team, the route's permission checked there). */
async function loadDestination(deps: Deps, id: string) {
  const row = await BackupDestination.query(deps.knex).findById(id);
  if (!row) throw errors.notFound('backup destination');
  return row;
}

/** The team's destinations (the route's scope and permission already hold for `teamId`). */
export async function listDestinations(deps: Deps, teamId: string) {
  const rows = await BackupDestination.query(deps.knex).where({ team_id: teamId }).orderBy('created_at');
  return Promise.all(rows.map((r) => withUsage(deps, r)));
}

export async function getDestination(deps: Deps, id: string) {
  return withUsage(deps, await loadDestination(deps, id));
}

const nameTaken = () =>
  appError('conflict', 'The team has a destination of that name', {
    fields: { name: 'is already used by another destination of this team' },
  });

export async function createDestination(
  deps: Deps,
  actor: Actor,
  teamId: string,
  input: CreateDestination,
  address: string,
) {
  const id = randomUUID();
  let settings: Record<string, string>;
  let secretsSealed: string | null = null;
  let spec: DestinationSpec;
  if (input.kind === 'local') {
    const real = await checkLocalPath(deps, input.path);
    await checkOtherTeams(deps.knex, teamId, real);
    settings = { path: real };
    spec = { kind: 'local', settings: { path: real } };
  } else {
    settings = {
      endpoint: input.endpoint,
      region: input.region,
      bucket: input.bucket,
      ...(input.prefix ? { prefix: input.prefix } : {}),
    };
    const secrets = { access_key_id: input.access_key_id, secret_access_key: input.secret_access_key };
    secretsSealed = seal(deps.secrets, JSON.stringify(secrets), aad.backupDestination(id));
    spec = { kind: 's3', settings: settings as never, secrets };
  }
  if (await BackupDestination.query(deps.knex).findOne({ team_id: teamId, name: input.name })) throw nameTaken();
  await probe(deps, spec);
  try {
    const row = await deps.knex.transaction(async (trx) => {
      if (input.kind === 'local') await checkOtherTeams(trx, teamId, settings.path, undefined, true);
      const r = await BackupDestination.query(trx).insertAndFetch({
        id,
        team_id: teamId,
        name: input.name,
        kind: input.kind,
        settings,
        secrets_sealed: secretsSealed,
      });
      await recordBackupsEvent(trx, {
        teamId,
        actor,
        type: 'backup_destination_added',
        address,
        summary: `Backup destination "${input.name}" (${input.kind}) added`,
      });
      return r;
    });
    return withUsage(deps, row);
  } catch (err) {
    if (err instanceof UniqueViolationError) throw nameTaken();
    throw err;
  }
}

export async function updateDestination(
  deps: Deps,
  actor: Actor,
  id: string,
  input: UpdateDestination,
  address: string,
) {
  const row = await loadDestination(deps, id);
  const wrongKind = Object.keys(input).filter((k) => k !== 'name' && !FIELDS[row.kind].includes(k));
  if (wrongKind.length)
    throw errors.invalid(Object.fromEntries(wrongKind.map((k) => [k, `is not a field of a ${row.kind} destination`])));
  const current = destinationSpec(deps, row);
  let spec: DestinationSpec;
  let settings = { ...row.settings };
  let secretsSealed = row.secrets_sealed;
  let claim: BackupDestination | undefined;
  if (current.kind === 'local') {
    // the path it keeps is checked again too: a destination no longer allowed is not probed (written) there
    settings = { path: await checkLocalPath(deps, input.path ?? row.settings.path) };
    // a new directory is a new claim; the one it keeps, only against the destinations made before it
    claim = settings.path === row.settings.path ? row : undefined;
    await checkOtherTeams(deps.knex, row.team_id, settings.path, claim);
    spec = { kind: 'local', settings: { path: settings.path } };
  } else {
    for (const k of ['endpoint', 'region', 'bucket', 'prefix'] as const)
      if (input[k] !== undefined) settings[k] = input[k]!;
    const secrets = { ...current.secrets };
    for (const k of SECRET_FIELDS) if (input[k] !== undefined) secrets[k] = input[k]!;
    secretsSealed = seal(deps.secrets, JSON.stringify(secrets), aad.backupDestination(row.id));
    spec = { kind: 's3', settings: settings as never, secrets };
  }
  if (
    input.name !== undefined &&
    input.name !== row.name &&
    (await BackupDestination.query(deps.knex).findOne({ team_id: row.team_id, name: input.name }))
  ) {
    throw nameTaken();
  }
  await probe(deps, spec);
  try {
    const updated = await deps.knex.transaction(async (trx) => {
      if (row.kind === 'local') await checkOtherTeams(trx, row.team_id, settings.path, claim, true);
      const r = await BackupDestination.query(trx).patchAndFetchById(id, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        settings,
        secrets_sealed: secretsSealed,
        updated_at: new Date(),
      });
      await recordBackupsEvent(trx, {
        teamId: row.team_id,
        actor,
        type: 'backup_destination_changed',
        address,
        summary: `Backup destination "${r.name}" changed`,
      });
      return r;
    });
    return withUsage(deps, updated);
  } catch (err) {
    if (err instanceof UniqueViolationError) throw nameTaken();
    throw err;
  }
}
