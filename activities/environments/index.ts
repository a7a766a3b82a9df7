/**
 * Taking a deleted environment off this host: its web process, its sandbox network, any process still
 * running as its uid, its cgroups and its files (releases, home, volume), and its releases in the release
 * store. Until this has run, the port (and so the uid and the network namespace that derive from it) stays in retiring_ports and no new
 * environment gets it. Idempotent: the workflow retries it, and the worker runs it at start for rows left.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { volumePath } from '../../db/queries/storage';
import { removeTree } from '../../host/no-follow';
import { environmentKey } from '../../host/release-store';

export interface RetireInput {
  environmentId: string;
  port: number;
  /** The host its web server was placed on: the retire runs on that host's queue (unset: the shared queue). */
  host?: string;
}

export function createEnvironmentActivities(deps: Deps, provider: Provider) {
  const { supervisor } = provider;
  async function retireEnvironmentHost(input: RetireInput): Promise<{ killed: boolean }> {
    const { environmentId, port } = input;
    await supervisor.retire(environmentId, port);
    const uid = provider.tenantUid(port);
    const killed = uid === null ? false : await killUid(uid);
    // Its trees are the tenant's: removed from descriptors of their root-owned parents (`rm -rf` there follows
    // no link), never by a path the tenant could have turned into a link meanwhile (no-follow.ts).
    const envDir = provider.environmentDir(environmentId);
    await removeTree(path.dirname(envDir), path.basename(envDir));
    // its volume, any copy a move left and a put-back's staging copies, under every root of STORAGE_ROOTS
    // (the rows saying where are gone)
    for (const root of deps.config.storageRoots) {
      const volumes = path.dirname(volumePath(root, environmentId));
      for (const suffix of ['', '.restore', '.old', '.put-back'])
        await removeTree(volumes, `${environmentId}${suffix}`);
    }
    // its releases in the release store (RELEASE_STORE): the environment's rows went with it
    await provider.releaseStore.deleteUnder(environmentKey(environmentId));
    await deps.knex('retiring_ports').where({ port, environment_id: environmentId }).delete();
    deps.logger.info({ environmentId, port }, 'deleted environment taken off this host');
    return { killed };
  }
  return {
    retireEnvironmentHost,
    /** At worker start: what was deleted while no worker (or no Temporal) could take it off. */
    async retireLeftovers(): Promise<number> {
      const rows: RetireInput[] = await deps
        .knex('retiring_ports')
        .select({ environmentId: 'environment_id', port: 'port' })
        .where('created_at', '<', deps.knex.raw("now() - interval '1 minute'"));
      for (const row of rows) {
        await retireEnvironmentHost(row).catch((err) =>
          deps.logger.warn({ err, environmentId: row.environmentId }, 'could not retire a deleted environment'),
        );
      }
      return rows.length;
    },
  };
}

/** SIGKILL to every process running as the uid, then waits until they are gone; true when there was one. */
async function killUid(uid: number): Promise<boolean> {
  const killed = await pkill(uid);
  const deadline = Date.now() + 10_000;
  while (await pkill(uid, '0')) {
    if (Date.now() > deadline) throw new Error(`processes of uid ${uid} are still there after SIGKILL`);
    await new Promise((r) => setTimeout(r, 100));
    await pkill(uid);
  }
  return killed;
}

/** pkill with a signal (0: only asks whether one matches); true when a process matched. */
function pkill(uid: number, signal = 'KILL'): Promise<boolean> {
  return new Promise((resolve, reject) => {
    execFile('pkill', [`-${signal}`, '-U', String(uid)], (err) => {
      if (!err) return resolve(true);
      // pkill: 1 = nothing matched
      if ((err as { code?: number }).code === 1) return resolve(false);
      reject(new Error(`pkill failed: ${err.message}`));
    });
  });
}
