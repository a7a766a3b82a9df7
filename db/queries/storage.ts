/**
 * Where an environment's disks live, shared by the API (storage routes, used bytes), the backups (they tar
 * the volume) and the provider (VC_VOLUME_PATH, the sandbox's bind, moves):
 * - `files`, the volume: `<root>/volumes/<environment id>`, owned by the environment's uid;
 * - `database`, the service database's tablespace: `<root>/database/<environment id>/<generation>`, owned
 *   by the services server's OS user (generation 0 is the server's default tablespace: nothing under a root).
 * A root is one of STORAGE_ROOTS; an environment's rows are made the first time its storage is used, on the
 * first root, with the allowance its web server's plan includes split between the two disks.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import { StorageDisk, type DiskName } from '../models/storage-disk';
import { openSubscription } from './subscriptions';
import { placedOn } from './host-moves';
import { lastVolumeBytes } from './resources';

export const DISKS = ['database', 'files'] as const satisfies readonly DiskName[];

/** What a plan includes when the environment has no web server row (the shipped default plan's disk). */
const FALLBACK_INCLUDED_GB = 10;

export function volumePath(root: string, envId: string): string {
  return path.join(root, 'volumes', envId);
}

export function tablespaceDir(root: string, envId: string, generation: number): string {
  return path.join(root, 'database', envId, String(generation));
}

/** The tablespace of a database disk's generation (0: the server's default one). */
export function tablespaceName(envId: string, generation: number): string {
  return generation === 0 ? 'pg_default' : `vc_${envId.replace(/-/g, '')}_${generation}`;
}

/** Storage the environment's web server's plan includes (what is not paid for separately). */
export async function includedStorageGb(knex: Knex | Knex.Transaction, envId: string): Promise<number> {
  const web = await knex('servers').where({ environment_id: envId, role: 'web' }).first('disk_gb');
  return web ? Number(web.disk_gb) : FALLBACK_INCLUDED_GB;
}

export interface EnvironmentStorage {
  allowance_gb: number;
  subscription_id: string | null;
  database: StorageDisk;
  files: StorageDisk;
}

/**
 * The environment's allowance and disks, made on first use: the allowance its plan includes, the database
 * disk the larger half, both on the first root. `forUpdate` locks the allowance row (changes in a transaction).
 */
export async function environmentStorage(
  knex: Knex | Knex.Transaction,
  roots: string[],
  envId: string,
  o: { forUpdate?: boolean } = {},
): Promise<EnvironmentStorage> {
  const readDisks = () => StorageDisk.query(knex).where({ environment_id: envId });
  let allowance = await readAllowance(knex, envId, o.forUpdate);
  let disks = allowance ? await readDisks() : [];
  // Made on first use, which may be several requests at once: one may find the allowance another has just
  // made before that one made the disks, so the disks are checked too (every insert ignores a row made first).
  if (!allowance || disks.length < 2) {
    const env = await knex('environments').where({ id: envId }).first('id', 'team_id', 'project_id');
    if (!env) throw new Error(`no environment ${envId}`);
    const included = Math.max(2, await includedStorageGb(knex, envId));
    const files = Math.floor(included / 2);
    await knex('storage_allowances')
      .insert({ environment_id: envId, allowance_gb: included })
      .onConflict('environment_id')
      .ignore();
    const base = { team_id: env.team_id, project_id: env.project_id, environment_id: envId, location: roots[0] };
    await knex('storage_disks')
      .insert([
        { ...base, disk: 'database', size_gb: included - files },
        { ...base, disk: 'files', size_gb: files },
      ])
      .onConflict(['environment_id', 'disk'])
      .ignore();
    allowance = await readAllowance(knex, envId, o.forUpdate);
    disks = await readDisks();
  }
  const byName = Object.fromEntries(disks.map((d) => [d.disk, d])) as Record<DiskName, StorageDisk>;
  return {
    allowance_gb: allowance!.allowance_gb,
    subscription_id: allowance!.subscription_id,
    database: byName.database,
    files: byName.files,
  };
}

async function readAllowance(knex: Knex | Knex.Transaction, envId: string, forUpdate?: boolean) {
  const q = knex('storage_allowances').where({ environment_id: envId });
  if (forUpdate) q.forUpdate();
  return (await q.first()) as { allowance_gb: number; subscription_id: string | null } | undefined;
}

/**
 * THE resolver of an environment's volume: the directory of its `files` disk under the root it lives on now
 * (an environment whose storage was never used: the first root, where its disk will be made). Every reader
 * and writer of the volume (web processes, deploy steps, backups, restores, moves) goes through it.
 */
export async function environmentVolume(
  knex: Knex | Knex.Transaction,
  roots: string[],
  envId: string,
): Promise<string> {
  const files = await knex('storage_disks').where({ environment_id: envId, disk: 'files' }).first('location');
  return volumePath(files?.location ?? roots[0], envId);
}

/** The root its `files` disk is recorded under (null: none recorded yet, each host takes its first root). */
export async function volumeLocation(knex: Knex | Knex.Transaction, envId: string): Promise<string | null> {
  const row = await knex('storage_disks').where({ environment_id: envId, disk: 'files' }).first('location');
  return row?.location ?? null;
}

/** Records the root of its `files` disk (a move put its volume under another host's root, or failed and put it back). */
export async function setVolumeLocation(knex: Knex | Knex.Transaction, envId: string, location: string): Promise<void> {
  await knex('storage_disks')
    .where({ environment_id: envId, disk: 'files' })
    .update({ location, updated_at: knex.fn.now() });
}

/**
 * Where this process can learn of an environment's volume, which may be on another machine (no disk is shared
 * between hosts): `here` when the environment is placed on `hostName` (or not placed: the control plane's own
 * host), so this machine's disk is read; else the bytes its own host's sampler last recorded
 * (resource_samples.volume_bytes; null when no sample says). Each caller decides what an unknown means.
 */
export async function volumeReading(
  knex: Knex,
  hostName: string,
  envId: string,
): Promise<{ here: true } | { here: false; sampledBytes: number | null }> {
  if (await placedOn(knex, envId, hostName)) return { here: true };
  return { here: false, sampledBytes: await lastVolumeBytes(knex, envId) };
}

/** Whether the environment's volume holds anything (backups skip environments with no data at all). */
export async function volumeHasFiles(knex: Knex | Knex.Transaction, roots: string[], envId: string): Promise<boolean> {
  const dir = await environmentVolume(knex, roots, envId);
  return (await readdir(dir).catch(() => [])).length > 0;
}

export interface StoragePricing {
  currency: string;
  /** The monthly price of `gb` GB of storage (core/pricing.ts storagePrice). */
  price: (gb: number) => number;
}

/**
 * Sets the environment's allowance (in the caller's transaction, the allowance row locked): the part beyond
 * what its plan includes is a `storage` subscription, replaced (the old one ended now) when its price
 * changes, ended when nothing is beyond the plan any more.
 */
export async function setAllowance(
  trx: Knex.Transaction,
  envId: string,
  allowanceGb: number,
  pricing: StoragePricing,
): Promise<void> {
  const current = await trx('storage_allowances').where({ environment_id: envId }).forUpdate().first();
  const env = await trx('environments').where({ id: envId }).first('id', 'team_id', 'project_id', 'name');
  const beyond = Math.max(0, allowanceGb - (await includedStorageGb(trx, envId)));
  const price = pricing.price(beyond);
  let subscriptionId: string | null = current?.subscription_id ?? null;
  const sub = subscriptionId ? await trx('subscriptions').where({ id: subscriptionId }).first() : null;
  const live = sub && sub.status !== 'ended' ? sub : null;
  if (!live || Number(live.monthly_price) !== price || live.item !== storageItem(env.name, beyond)) {
    if (live) await trx('subscriptions').where({ id: live.id }).update({ status: 'ended', ended_at: trx.fn.now() });
    subscriptionId = null;
    if (beyond > 0) {
      const opened = await openSubscription(trx, {
        teamId: env.team_id,
        projectId: env.project_id,
        environmentId: env.id,
        kind: 'storage',
        resourceId: env.id,
        item: storageItem(env.name, beyond),
        monthlyPrice: price,
        currency: pricing.currency,
      });
      subscriptionId = opened.id;
    }
  }
  await trx('storage_allowances')
    .where({ environment_id: envId })
    .update({ allowance_gb: allowanceGb, subscription_id: subscriptionId, updated_at: trx.fn.now() });
}

const storageItem = (envName: string, gb: number) => `Storage beyond the plan, ${gb} GB (${envName})`;

/** Sets a disk's size (the disk by its id, or the environment's disk of that name). */
export async function setDiskSize(
  knex: Knex | Knex.Transaction,
  where: { id: string } | { environment_id: string; disk: DiskName },
  sizeGb: number,
): Promise<void> {
  await knex('storage_disks').where(where).update({ size_gb: sizeGb, updated_at: knex.fn.now() });
}

/** Records a disk's move to another root: where it lives now, where its old copy stays (and their generations). */
export async function recordDiskMove(
  knex: Knex | Knex.Transaction,
  diskId: string,
  move: { location: string; old_location: string; generation?: number; old_generation?: number },
): Promise<void> {
  await knex('storage_disks')
    .where({ id: diskId })
    .update({ ...move, updated_at: knex.fn.now() });
}

/** The old copy a move left of the disk is gone (a database disk's old generation with it). */
export async function forgetOldCopy(
  knex: Knex | Knex.Transaction,
  disk: { id: string; disk: DiskName },
): Promise<void> {
  await knex('storage_disks')
    .where({ id: disk.id })
    .update(
      disk.disk === 'database'
        ? { old_location: null, old_generation: null, updated_at: knex.fn.now() }
        : { old_location: null, updated_at: knex.fn.now() },
    );
}

interface StorageDiskRow {
  id: string;
  team_id: string;
  project_id: string;
  environment_id: string;
  disk: DiskName;
  size_gb: number;
  location: string;
  old_location: string | null;
  generation: number;
  old_generation: number | null;
  created_at: Date;
  updated_at: Date;
}

/** The volume (the `files` disk) of that id, or undefined. */
export async function volumeById(knex: Knex | Knex.Transaction, volumeId: string): Promise<StorageDiskRow | undefined> {
  return knex('storage_disks').where({ id: volumeId, disk: 'files' }).first();
}

/** Every root a disk lives under or keeps an old copy under (location, old_location pairs, distinct). */
export async function diskLocations(
  knex: Knex | Knex.Transaction,
): Promise<Array<{ location: string; old_location: string | null }>> {
  return knex('storage_disks').distinct('location', 'old_location');
}
