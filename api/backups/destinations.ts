/**
 * Backup destinations of a team: created and changed only after a probe object was written, read and deleted
 * there (422 naming the field at fault otherwise). Secret fields are sealed at rest and never shown.
 */
import { randomUUID } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { open, seal } from '../../system/crypto';
import { BackupDestination } from '../../db/models/backup-destination';
import type { Actor } from '../lib/actor';
import { AppError, errors } from '../lib/errors';
import { iso } from '../lib/time';
import { DESTINATION_KINDS, probeStoreFault, type DestinationSpec } from '../../activities/data/destinations';
import type { CreateDestination, UpdateDestination } from './schemas';
import { recordBackupsEvent } from './events';

const SECRET_FIELDS = ['access_key_id', 'secret_access_key'] as const;
const FIELDS: Record<'local' | 's3', readonly string[]> = {
  local: ['path'],
  s3: ['endpoint', 'region', 'bucket', 'prefix', ...SECRET_FIELDS],
};

const aad = (id: string) => `backup-destination:${id}`;

/** The store spec of a destination row, secrets opened (worker and API only; never shown). */
export function destinationSpec(deps: Pick<Deps, 'secrets'>, row: BackupDestination): DestinationSpec {
  if (row.kind === 'local') return { kind: 'local', settings: { path: row.settings.path } };
  const secrets = JSON.parse(open(deps.secrets, row.secrets_sealed ?? '', aad(row.id)));
  return { kind: 's3', settings: row.settings as never, secrets };
}

export function destinationKinds() {
  return { kinds: DESTINATION_KINDS.map((k) => ({ kind: k.kind, fields: k.fields.map((f) => ({ ...f })) })) };
}

export async function presentDestination(deps: Deps, row: BackupDestination) {
  const usage = (await deps
    .knex('backups')
    .where({ destination_id: row.id, status: 'available' })
    .first(
      deps.knex.raw('count(*)::int AS snapshots'),
      deps.knex.raw('coalesce(sum(size_bytes), 0)::bigint AS used'),
    )) as { snapshots: number; used: string };
  return {
    id: row.id,
    team_id: row.team_id,
    name: row.name,
    kind: row.kind,
    settings: row.settings,
    secret_fields: row.secrets_sealed ? [...SECRET_FIELDS] : [],
    snapshots: usage.snapshots,
    used_bytes: Number(usage.used),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** 422 on `path` unless it is an existing directory outside DATA_DIR. */
async function checkLocalPath(deps: Deps, p: string): Promise<string> {
  if (!path.isAbsolute(p)) throw errors.invalid({ path: 'must be an absolute path' });
  let real: string;
  try {
    real = await realpath(p);
    if (!(await stat(real)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw errors.invalid({ path: 'must be an existing directory' });
  }
  const dataDir = await realpath(deps.config.dataDir).catch(() => path.resolve(deps.config.dataDir));
  if (real === dataDir || real.startsWith(dataDir + path.sep) || dataDir.startsWith(real + path.sep)) {
    throw errors.invalid({ path: "must be outside the console's data directory" });
  }
  return real;
}

/** Probes the store; a failure is a 422 on the fields it points at (activities/data/destinations.ts). */
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
  return { data: await Promise.all(rows.map((r) => presentDestination(deps, r))) };
}

export async function getDestination(deps: Deps, id: string) {
  return presentDestination(deps, await loadDestination(deps, id));
}

const nameTaken = () =>
  new AppError(409, 'conflict', 'The team has a destination of that name', {
    name: 'is already used by another destination of this team',
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
    secretsSealed = seal(deps.secrets, JSON.stringify(secrets), aad(id));
    spec = { kind: 's3', settings: settings as never, secrets };
  }
  if (await BackupDestination.query(deps.knex).findOne({ team_id: teamId, name: input.name })) throw nameTaken();
  await probe(deps, spec);
  try {
    const row = await deps.knex.transaction(async (trx) => {
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
    return presentDestination(deps, row);
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
  if (current.kind === 'local') {
    if (input.path !== undefined) settings = { path: await checkLocalPath(deps, input.path) };
    spec = { kind: 'local', settings: { path: settings.path } };
  } else {
    for (const k of ['endpoint', 'region', 'bucket', 'prefix'] as const)
      if (input[k] !== undefined) settings[k] = input[k]!;
    const secrets = { ...current.secrets };
    for (const k of SECRET_FIELDS) if (input[k] !== undefined) secrets[k] = input[k]!;
    secretsSealed = seal(deps.secrets, JSON.stringify(secrets), aad(row.id));
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
    return presentDestination(deps, updated);
  } catch (err) {
    if (err instanceof UniqueViolationError) throw nameTaken();
    throw err;
  }
}
