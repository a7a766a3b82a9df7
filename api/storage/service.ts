/**
 * Storage of an environment (CONTRACT "Machines"): its allowance, split between the `database` and `files`
 * disks (the two always sum to the allowance), each disk's size and the root of STORAGE_ROOTS it lives
 * under, moves to another root and the discard of the copy a move leaves (tasks), and the volume (the
 * `files` disk) growing (a task). Storage beyond what the web server's plan includes is a paid subscription.
 *
 * Rules: a volume never shrinks (422 on the size); a disk never gets smaller than what it holds (422); a
 * change that leaves the other disk less than it must keep is over the allowance (409
 * `storage_allowance_spent`). Sizes are recorded and priced; used bytes are measured (du, pg_database_size).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { loadPriceList, monthlyPriceDelta, storagePrice } from '../../core/pricing';
import { startTask } from '../../core/tasks';
import { recordActivity } from '../../db/queries/activity';
import {
  environmentStorage,
  includedStorageGb,
  setAllowance,
  setDiskSize,
  volumePath,
  volumeReading,
  type EnvironmentStorage,
  type StoragePricing,
} from '../../db/queries/storage';
import type { DiskName, StorageDisk } from '../../db/models/storage-disk';
import { environmentHost } from '../../db/queries/hosts';
import { environmentName } from '../../db/queries/environments';
import { hasPostgresqlService, postgresqlDatabaseName } from '../../db/queries/services';
import { withAdmin } from '../../host/pg-server';
import { MAX_ALLOWANCE_GB } from './schemas';

const run = promisify(execFile);
const GB = 1024 ** 3;

export interface Env {
  id: string;
  team_id: string;
  project_id: string;
  name: string;
}

/**
 * The roots the `files` disk (the volume) may live under: the STORAGE_ROOTS of the machine the environment's web
 * server is placed on, as its host published them (db/queries/hosts.ts). The control plane's own host shares this
 * process's config (`npm start` runs both), and an environment with no host recorded runs on that machine: both
 * read this process's STORAGE_ROOTS. A recorded host that is not registered has none.
 */
async function volumeRoots(deps: Deps, envId: string): Promise<string[]> {
  const host = await environmentHost(deps.knex, envId);
  if (!host || host.name === deps.config.hostName) return deps.config.storageRoots;
  return host.roots ?? [];
}

/**
 * The roots a disk may move to: the volume's are its host's (above); the `database` disk is a tablespace of the
 * services server, the control plane's PostgreSQL, so its roots are the control plane's (this process's).
 */
const diskRoots = (deps: Deps, envId: string, disk: DiskName) =>
  disk === 'database' ? Promise.resolve(deps.config.storageRoots) : volumeRoots(deps, envId);

/** The environment's storage; made on first use on the first root of its volume's host. */
async function storageOf(deps: Deps, envId: string) {
  return environmentStorage(deps.knex, await volumeRoots(deps, envId), envId);
}
const pricing = (deps: Deps): StoragePricing => {
  const list = loadPriceList(deps.config);
  return { currency: list.currency, price: (gb) => storagePrice(list, gb) };
};

// ---- measuring ----------------------------------------------------------------------------------

/** Bytes a directory takes on its disk (du); 0 when it does not exist. */
async function duBytes(dir: string): Promise<number> {
  try {
    const { stdout } = await run('du', ['-s', '--block-size=1', '--', dir]);
    return Number(stdout.split(/\s/)[0]) || 0;
  } catch {
    return 0;
  }
}

/** Bytes the environment's service database takes (pg_database_size); 0 without an available service. */
async function databaseBytes(deps: Deps, envId: string): Promise<number> {
  const databaseName = await postgresqlDatabaseName(deps.knex, envId);
  if (databaseName === undefined) return 0;
  return withAdmin(deps.config, async (c) => {
    const r = await c.query('SELECT pg_database_size(datname)::bigint AS n FROM pg_database WHERE datname = $1', [
      databaseName,
    ]);
    return Number(r.rows[0]?.n ?? 0);
  }).catch(() => 0);
}

/**
 * Bytes the environment's volume takes: measured here when it is on this machine's host, else what its own host's
 * sampler last recorded (resource_samples.volume_bytes; 0 before any sample), as no disk is shared between hosts.
 */
async function volumeBytes(deps: Deps, envId: string, location: string): Promise<number> {
  const volume = await volumeReading(deps.knex, deps.config.hostName, envId);
  return volume.here ? duBytes(volumePath(location, envId)) : (volume.sampledBytes ?? 0);
}

async function usedBytes(deps: Deps, envId: string, s: EnvironmentStorage) {
  const [database, files] = await Promise.all([databaseBytes(deps, envId), volumeBytes(deps, envId, s.files.location)]);
  return { database, files };
}

/** The least a disk may be: what it holds (whole GB, at least 1); a volume also never less than it is. */
function minimumGb(disk: StorageDisk, used: number): number {
  const held = Math.max(1, Math.ceil(used / GB));
  return disk.disk === 'files' ? Math.max(held, disk.size_gb) : held;
}

// ---- allowance ----------------------------------------------------------------------------------

export async function getAllowance(deps: Deps, env: Env) {
  const s = await storageOf(deps, env.id);
  const included = await includedStorageGb(deps.knex, env.id);
  const p = pricing(deps);
  const sub = s.subscription_id
    ? await deps.knex('subscriptions').where({ id: s.subscription_id }).whereNot({ status: 'ended' }).first('order')
    : null;
  return {
    allowance_gb: s.allowance_gb,
    included_gb: included,
    used_bytes: await usedBytes(deps, env.id, s),
    monthly_price: p.price(Math.max(0, s.allowance_gb - included)),
    currency: p.currency,
    order: sub?.order ?? null,
  };
}

/**
 * A new allowance: more goes to the volume (the `files` disk); less is taken from the `database` disk, which
 * must keep what its database holds (else 409 storage_allowance_spent: the volume never shrinks).
 */
export async function changeAllowance(deps: Deps, actor: Actor, env: Env, allowanceGb: number) {
  const used = await usedBytes(deps, env.id, await storageOf(deps, env.id));
  await applySizes(deps, actor, env, (s) => {
    const diff = allowanceGb - s.allowance_gb;
    const shrunk = s.database.size_gb + Math.min(0, diff);
    if (shrunk < minimumGb(s.database, used.database)) {
      throw allowanceSpent(
        `An allowance of ${allowanceGb} GB leaves the database disk ${shrunk} GB, less than it must keep ` +
          `(${minimumGb(s.database, used.database)} GB), and a volume never shrinks (${s.files.size_gb} GB)`,
      );
    }
    return {
      allowance: allowanceGb,
      database: shrunk,
      files: s.files.size_gb + Math.max(0, diff),
      summary: `storage allowance of ${env.name}: ${s.allowance_gb} GB -> ${allowanceGb} GB`,
      type: 'storage_allowance_set',
    };
  });
  return getAllowance(deps, env);
}

function allowanceSpent(message: string) {
  return errors.conflict('storage_allowance_spent', message);
}

interface Sizes {
  allowance: number;
  database: number;
  files: number;
  summary: string;
  type: string;
}

/**
 * Decides the sizes from the storage as it is with its allowance row locked (`decide` throws to refuse),
 * then writes them, the allowance with its subscription, and the activity, in that one transaction.
 */
async function applySizes(deps: Deps, actor: Actor, env: Env, decide: (s: EnvironmentStorage) => Sizes) {
  const roots = await volumeRoots(deps, env.id);
  await deps.knex.transaction(async (trx) => {
    const o = decide(await environmentStorage(trx, roots, env.id, { forUpdate: true }));
    await setAllowance(trx, env.id, o.allowance, pricing(deps));
    for (const [disk, size] of [
      ['database', o.database],
      ['files', o.files],
    ] as const) {
      await setDiskSize(trx, { environment_id: env.id, disk }, size);
    }
    await recordActivity(trx, {
      teamId: env.team_id,
      actor,
      kind: 'machines',
      type: o.type,
      projectId: env.project_id,
      environmentId: env.id,
      summary: o.summary,
    });
  });
}

// ---- split and disks ----------------------------------------------------------------------------

export async function getSplit(deps: Deps, env: Env) {
  const s = await storageOf(deps, env.id);
  return { database_gb: s.database.size_gb, files_gb: s.files.size_gb };
}

/** Both sizes at once; they must sum to the allowance (more: 409; less: 422), each at least its minimum. */
export async function changeSplit(deps: Deps, actor: Actor, env: Env, body: { database_gb: number; files_gb: number }) {
  const used = await usedBytes(deps, env.id, await storageOf(deps, env.id));
  await applySizes(deps, actor, env, (s) => {
    const sum = body.database_gb + body.files_gb;
    if (sum > s.allowance_gb) {
      throw allowanceSpent(
        `${body.database_gb} GB + ${body.files_gb} GB is more than the allowance (${s.allowance_gb} GB)`,
      );
    }
    const fields: Record<string, string> = {};
    if (sum < s.allowance_gb) fields.files_gb = `database_gb + files_gb must be the allowance (${s.allowance_gb} GB)`;
    else if (body.files_gb < s.files.size_gb) fields.files_gb = `a volume never shrinks: it has ${s.files.size_gb} GB`;
    else if (body.files_gb < minimumGb(s.files, used.files)) fields.files_gb = 'is less than the volume holds';
    if (body.database_gb < minimumGb(s.database, used.database))
      fields.database_gb = `is less than the database holds (${minimumGb(s.database, used.database)} GB)`;
    if (Object.keys(fields).length) throw errors.invalid(fields);
    return {
      allowance: s.allowance_gb,
      database: body.database_gb,
      files: body.files_gb,
      summary: `storage of ${env.name} split: database ${body.database_gb} GB, files ${body.files_gb} GB`,
      type: 'storage_split_set',
    };
  });
  return getSplit(deps, env);
}

export async function getDisk(deps: Deps, env: Env, disk: DiskName) {
  const s = await storageOf(deps, env.id);
  const row = s[disk];
  const used = await usedBytes(deps, env.id, s);
  return {
    disk,
    size_gb: row.size_gb,
    location: row.location,
    volume_id: disk === 'files' ? row.id : null,
    old_location: row.old_location,
    used_bytes: used[disk],
    roots: await diskRoots(deps, env.id, disk),
  };
}

/** One disk's size; the other disk gets the rest of the allowance, which must hold it (else 409). */
export async function changeDisk(deps: Deps, actor: Actor, env: Env, disk: DiskName, sizeGb: number) {
  const used = await usedBytes(deps, env.id, await storageOf(deps, env.id));
  await applySizes(deps, actor, env, (s) => {
    const min = minimumGb(s[disk], used[disk]);
    if (sizeGb < min) {
      throw errors.invalid({
        size_gb:
          disk === 'files' && sizeGb < s.files.size_gb
            ? `a volume never shrinks: it has ${s.files.size_gb} GB`
            : `is less than the disk holds (${min} GB)`,
      });
    }
    const other: DiskName = disk === 'files' ? 'database' : 'files';
    const rest = s.allowance_gb - sizeGb;
    const otherMin = minimumGb(s[other], used[other]);
    if (rest < otherMin) {
      throw allowanceSpent(
        `${sizeGb} GB for ${disk} leaves ${rest} GB of the ${s.allowance_gb} GB allowance for ${other}, which needs ${otherMin} GB`,
      );
    }
    return {
      allowance: s.allowance_gb,
      database: disk === 'database' ? sizeGb : rest,
      files: disk === 'files' ? sizeGb : rest,
      summary: `${disk} disk of ${env.name}: ${s[disk].size_gb} GB -> ${sizeGb} GB`,
      type: 'storage_disk_set',
    };
  });
  return getDisk(deps, env, disk);
}

// ---- moves --------------------------------------------------------------------------------------

/** Starts moving the disk to another root (`machines`/`storage_move`, one change at a time per environment). */
export async function requestMove(deps: Deps, actor: Actor, env: Env, disk: DiskName, location: string) {
  const s = await storageOf(deps, env.id);
  const row = s[disk];
  const roots = await diskRoots(deps, env.id, disk);
  const root = roots.find((r) => r === location || r === location.replace(/\/+$/, ''));
  if (!root) {
    const where = disk === 'database' ? 'the services server' : 'the machine this environment runs on';
    throw errors.invalid({
      location: `is not a root of STORAGE_ROOTS on ${where} (${roots.join(', ') || 'it publishes none'})`,
    });
  }
  if (root === row.location) throw errors.invalid({ location: `is where the ${disk} disk is` });
  if (row.old_location) {
    throw errors.invalid({
      location: `the copy the last move left at ${row.old_location} must be discarded first (POST /environments/{id}/storage/discard)`,
    });
  }
  if (disk === 'database') {
    if (!(await hasPostgresqlService(deps.knex, env.id)))
      throw errors.invalid({ disk: 'the environment has no database service: nothing to move' });
  }
  return startTask(deps, actor, {
    type: 'storage_move',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: { disk, disk_id: row.id, from: row.location, to: root },
    summary: `move the ${disk} disk of ${env.name} to ${root}`,
  });
}

/** Starts discarding the copies moves left (`machines`/`storage_discard`); `confirm: true` required. */
export async function requestDiscard(deps: Deps, actor: Actor, env: Env, confirm: boolean | undefined) {
  if (confirm !== true) {
    throw errors.invalid({ confirm: 'must be true: the copies the last moves left are deleted for good' });
  }
  const s = await storageOf(deps, env.id);
  const kept = [s.database, s.files].filter((d) => d.old_location).map((d) => `${d.disk} at ${d.old_location}`);
  return startTask(deps, actor, {
    type: 'storage_discard',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: {},
    summary: kept.length
      ? `discard the old copies of ${env.name}: ${kept.join(', ')}`
      : `discard old copies of ${env.name}`,
  });
}

// ---- volumes ------------------------------------------------------------------------------------

const GROW_STEPS = [5, 10, 20, 50, 100, 500];

/** What growing the volume to `sizeGb` adds to the monthly bill (the allowance grows with it). */
async function growDelta(deps: Deps, envId: string, s: EnvironmentStorage, sizeGb: number) {
  const included = await includedStorageGb(deps.knex, envId);
  const p = pricing(deps);
  const now = p.price(Math.max(0, s.allowance_gb - included));
  const then = p.price(Math.max(0, s.allowance_gb + (sizeGb - s.files.size_gb) - included));
  return monthlyPriceDelta(now, then);
}

export async function growChoices(deps: Deps, volume: StorageDisk) {
  const s = await storageOf(deps, volume.environment_id);
  const room = MAX_ALLOWANCE_GB - s.allowance_gb;
  const choices = [];
  for (const step of GROW_STEPS.filter((n) => n <= room)) {
    const size = s.files.size_gb + step;
    choices.push({ size_gb: size, monthly_price_delta: await growDelta(deps, volume.environment_id, s, size) });
  }
  return { size_gb: s.files.size_gb, currency: pricing(deps).currency, choices };
}

/** Starts growing the volume (`machines`/`volume_grow`): larger only (422 on size_gb), the allowance with it. */
export async function requestGrow(deps: Deps, actor: Actor, volume: StorageDisk, sizeGb: number) {
  const s = await storageOf(deps, volume.environment_id);
  if (sizeGb <= s.files.size_gb) {
    throw errors.invalid({
      size_gb: `a volume never shrinks: it has ${s.files.size_gb} GB; ask for more`,
    });
  }
  if (s.allowance_gb + (sizeGb - s.files.size_gb) > MAX_ALLOWANCE_GB) {
    throw errors.invalid({ size_gb: `takes the allowance past ${MAX_ALLOWANCE_GB} GB` });
  }
  const env = await environmentName(deps.knex, volume.environment_id);
  return startTask(deps, actor, {
    type: 'volume_grow',
    teamId: volume.team_id,
    projectId: volume.project_id,
    environmentId: volume.environment_id,
    params: {
      volume_id: volume.id,
      from_gb: s.files.size_gb,
      size_gb: sizeGb,
      monthly_price_delta: await growDelta(deps, volume.environment_id, s, sizeGb),
    },
    summary: `grow the volume of ${env?.name ?? 'the environment'} from ${s.files.size_gb} GB to ${sizeGb} GB`,
  });
}
