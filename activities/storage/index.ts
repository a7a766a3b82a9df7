/**
 * Storage activities on the local provider (CONTRACT "Machines"): a disk moved to another root of
 * STORAGE_ROOTS while the environment's web process is stopped (copied, verified, switched, started again),
 * the copies moves leave discarded, and the volume grown (its size and the allowance, priced).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { type TaskLog, withTaskLog } from '../toolkit/task-log';
import { withHeartbeat } from '../toolkit/heartbeat';
import {
  environmentStorage,
  forgetOldCopy,
  recordDiskMove,
  setAllowance,
  setDiskSize,
  volumeById,
  volumePath,
} from '../../db/queries/storage';
import type { DiskName } from '../../db/models/storage-disk';
import { loadPriceList, storagePrice } from '../../core/pricing';
import { serviceLogin } from '../data/service-env';
import { consoleEnv } from './volume-env';
import { treeDigest } from './tree-digest';
import { copyTree, Dir, removeTree, withDir } from '../../host/no-follow';
import { discardKeptDatabase, moveServiceDatabase } from './database-move';
import { userFault } from '../toolkit/failures';

const HEALTH_TIMEOUT_MS = 60_000;
const fail = (message: string) => userFault('StorageTaskFailed', message);

export function createStorageActivities(deps: Deps, provider: Provider) {
  const { supervisor } = provider;
  const { knex, config } = deps;
  // read at each use: STORAGE_ROOTS as the config says it now
  const roots = () => config.storageRoots;

  const withLog = <T>(taskId: string, fn: (log: TaskLog) => Promise<T>) =>
    withTaskLog(deps, taskId, (log) => withHeartbeat(() => fn(log)));

  /** Starts the web process again (stopped for a move) with where the disks are now. */
  async function startWeb(envId: string, log: TaskLog): Promise<void> {
    const r = await supervisor.restartWeb(envId, {
      env: await consoleEnv(deps, provider, envId),
      healthTimeoutMs: HEALTH_TIMEOUT_MS,
      onLine: (_s, line) => log.line(line),
    });
    if (!r.ok) throw fail(`the web process did not start again: ${r.message}`);
    if (r.restarted) log.line('==> Web process started');
  }

  /**
   * Copies the volume to the new root through descriptors (no-follow.ts): into `<envId>` made fresh there,
   * root's (0700) while it is written so that no tenant reaches it, with `tar -c | tar -x` (paths, modes,
   * numeric owners, links as they are, none followed); verified by digest before anything switches.
   */
  async function moveFiles(envId: string, from: string, to: string, log: TaskLog) {
    const fromVolumes = path.join(from, 'volumes');
    const toVolumes = path.join(to, 'volumes');
    await mkdir(toVolumes, { recursive: true });
    return withDir(toVolumes, [], async (dstParent) => {
      await dstParent.remove(envId); // a half copy of an earlier attempt
      const dst = await dstParent.dir(envId, { create: 0o700 });
      const src = await Dir.open(fromVolumes, envId).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return null;
        throw err;
      });
      try {
        if (src) {
          log.line(`==> Copying ${volumePath(from, envId)} to ${volumePath(to, envId)}`);
          await copyTree(src, dst);
        }
        const [a, b] = [await treeDigest(src ?? dst), await treeDigest(dst)];
        if (a.digest !== b.digest) {
          await dstParent.remove(envId);
          throw fail('the copy differs from the volume; the volume stays where it was');
        }
        log.line(`==> Verified: ${b.files} files, ${b.bytes} bytes, same paths, modes and SHA-256`);
        return { files: b.files, bytes: b.bytes };
      } finally {
        await src?.close();
        await dst.close();
      }
    });
  }

  /** Copies the service database into a tablespace at `to` (the services server's files: its host), switches it. */
  async function moveDatabase(
    envId: string,
    row: { id: string; location: string; generation: number },
    to: string,
    log: TaskLog,
  ): Promise<{ rows: number }> {
    const login = await serviceLogin(deps, envId);
    if (!login) throw fail('the environment has no database service: nothing to move');
    const generation = row.generation + 1;
    const r = await moveServiceDatabase(config, login, {
      envId,
      root: to,
      generation,
      say: (line) => log.line(line),
    });
    await recordDiskMove(knex, row.id, {
      location: to,
      old_location: row.location,
      generation,
      old_generation: row.generation,
    });
    return { rows: r.rows };
  }

  return {
    /**
     * The web process stopped on the environment's host, while its `database` disk moves on the services server's
     * host (`moveDatabaseDisk`); `startWebAfterMove` starts it again, also when the move failed.
     */
    async stopWebForMove(input: { taskId: string; environmentId: string }): Promise<{ stopped: boolean }> {
      return withLog(input.taskId, async (log) => {
        log.line('==> Stopping the web process while the database disk moves');
        const stopped = await supervisor.stopWeb(input.environmentId);
        if (!stopped) log.line('==> No web process runs here');
        return { stopped };
      });
    },

    async startWebAfterMove(input: { taskId: string; environmentId: string }): Promise<void> {
      return withLog(input.taskId, (log) => startWeb(input.environmentId, log));
    },

    /**
     * The `database` disk's move on the services server's host (workflows/storage.ts sends it there), its web
     * process stopped meanwhile on its own host. A retry after the switch finds it done.
     */
    async moveDatabaseDisk(input: { taskId: string; environmentId: string; to: string }) {
      return withLog(input.taskId, async (log) => {
        const envId = input.environmentId;
        const row = (await environmentStorage(knex, roots(), envId)).database;
        if (row.location === input.to && row.old_location) {
          log.line(`==> The database disk already lives under ${input.to}`);
          return { disk: 'database' as const, location: row.location, old_location: row.old_location };
        }
        if (!roots().includes(input.to)) throw fail(`${input.to} is not a root of STORAGE_ROOTS`);
        log.line(`==> Moving the database disk from ${row.location} to ${input.to}`);
        const measured = await moveDatabase(envId, row, input.to, log);
        log.line(
          `==> The database disk lives under ${input.to}; the old copy stays under ${row.location} until discarded`,
        );
        return { disk: 'database' as const, location: input.to, old_location: row.location, ...measured };
      });
    },

    /**
     * Moves one disk to `to`: the web process is stopped, the data copied and verified, the disk switched to
     * the new root (its old copy kept), and the web process started again (also when the move failed).
     */
    async moveStorageDisk(input: { taskId: string; environmentId: string; disk: DiskName; to: string }): Promise<{
      disk: DiskName;
      location: string;
      old_location: string;
      files?: number;
      bytes?: number;
      rows?: number;
    }> {
      return withLog(input.taskId, async (log) => {
        const envId = input.environmentId;
        const s = await environmentStorage(knex, roots(), envId);
        const row = s[input.disk];
        if (row.location === input.to && row.old_location) {
          log.line(`==> The ${input.disk} disk already lives under ${input.to}`);
          return { disk: input.disk, location: row.location, old_location: row.old_location };
        }
        if (!roots().includes(input.to)) throw fail(`${input.to} is not a root of STORAGE_ROOTS`);
        const from = row.location;
        log.line(`==> Stopping the web process while the ${input.disk} disk moves from ${from} to ${input.to}`);
        const stopped = await supervisor.stopWeb(envId);
        if (!stopped) log.line('==> No web process runs here');
        let measured: { files?: number; bytes?: number; rows?: number } = {};
        try {
          if (input.disk === 'files') {
            measured = await moveFiles(envId, from, input.to, log);
            await recordDiskMove(knex, row.id, { location: input.to, old_location: from });
          } else {
            measured = await moveDatabase(envId, row, input.to, log);
          }
          log.line(
            `==> The ${input.disk} disk lives under ${input.to}; the old copy stays under ${from} until discarded`,
          );
        } finally {
          if (stopped) await startWeb(envId, log);
        }
        return { disk: input.disk, location: input.to, old_location: from, ...measured };
      });
    },

    /**
     * Deletes the copies moves left of `disks` (default both): the volume directory (on the environment's host),
     * the kept database and its tablespace (on the services server's host). With `disks`, the workflow says what
     * was discarded in the end.
     */
    async discardOldStorage(input: {
      taskId: string;
      environmentId: string;
      disks?: DiskName[];
    }): Promise<{ discarded: string[] }> {
      return withLog(input.taskId, async (log) => {
        const envId = input.environmentId;
        const disks = input.disks ?? ['files', 'database'];
        const s = await environmentStorage(knex, roots(), envId);
        const discarded: string[] = [];
        if (disks.includes('files') && s.files.old_location) {
          const dir = volumePath(s.files.old_location, envId);
          log.line(`==> Deleting the old copy of the volume at ${dir}`);
          await removeTree(path.dirname(dir), envId);
          await forgetOldCopy(knex, s.files);
          discarded.push(`files@${s.files.old_location}`);
        }
        if (disks.includes('database') && s.database.old_location) {
          const service = await knex('services')
            .where({ environment_id: envId, kind: 'postgresql' })
            .first('database_name');
          if (service) {
            log.line(`==> Dropping the old copy of the database (${service.database_name}_kept)`);
            await discardKeptDatabase(
              config,
              { database: service.database_name },
              {
                envId,
                root: s.database.old_location,
                generation: s.database.old_generation ?? 0,
              },
            );
          }
          await forgetOldCopy(knex, s.database);
          discarded.push(`database@${s.database.old_location}`);
        }
        if (!input.disks)
          log.line(discarded.length ? `==> Discarded: ${discarded.join(', ')}` : '==> Nothing to discard');
        return { discarded };
      });
    },

    /** Grows the volume to `sizeGb` (never smaller), the allowance by as much, priced in one transaction. */
    async growVolume(input: {
      taskId: string;
      volumeId: string;
      sizeGb: number;
    }): Promise<{ size_gb: number; allowance_gb: number }> {
      return withLog(input.taskId, async (log) => {
        const volume = await volumeById(knex, input.volumeId);
        if (!volume) throw fail('the volume no longer exists');
        const list = loadPriceList(config);
        const out = await knex.transaction(async (trx) => {
          const s = await environmentStorage(trx, roots(), volume.environment_id, { forUpdate: true });
          const grow = Math.max(0, input.sizeGb - s.files.size_gb);
          await setAllowance(trx, volume.environment_id, s.allowance_gb + grow, {
            currency: list.currency,
            price: (gb) => storagePrice(list, gb),
          });
          await setDiskSize(trx, { id: s.files.id }, s.files.size_gb + grow);
          return { size_gb: s.files.size_gb + grow, allowance_gb: s.allowance_gb + grow, grew: grow };
        });
        log.line(
          out.grew > 0
            ? `==> The volume has ${out.size_gb} GB; the allowance ${out.allowance_gb} GB`
            : `==> The volume already has ${out.size_gb} GB`,
        );
        return { size_gb: out.size_gb, allowance_gb: out.allowance_gb };
      });
    },
  };
}

export type StorageActivities = ReturnType<typeof createStorageActivities>;
