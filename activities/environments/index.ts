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
import { releaseRetiringPort, retiringPortsLeft } from '../../db/queries/deleted-environments';
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
    await releaseRetiringPort(deps.knex, port, environmentId);
    deps.logger.info({ environmentId, port }, 'deleted environment taken off this host');
    return { killed };
  }
  return {
    retireEnvironmentHost,
    /** At worker start: what was deleted while no worker (or no Temporal) could take it off. */
    async retireLeftovers(): Promise<number> {
      const rows: RetireInput[] = await retiringPortsLeft(deps.knex);
      for (const row of rows) {
        await retireEnvironmentHost(row).catch((err) =>
          deps.logger.warn({ err, environmentId: row.environmentId }, 'could not retire a deleted environment'),
        );
      }
      return rows.length;
    },
  };
}

/**
 * SIGKILL to every process running as $1, again every 100 ms until none is left (at most 10 s): one shell for the
 * whole wait instead of a pkill spawned by the worker, a large process, at every look. Exits 0 when one was
 * killed, 1 when there was none, 3 when some are still there, or pkill's own code when pkill failed.
 */
const KILL_UID = `pkill -KILL -U "$1"; found=$?
[ "$found" -gt 1 ] && exit "$found"
n=0
while pkill -0 -U "$1"; do
  n=$((n + 1))
  [ "$n" -ge 100 ] && exit 3
  sleep 0.1
  pkill -KILL -U "$1" || true
done
exit "$found"`;

/** SIGKILL to every process running as the uid, then waits until they are gone; true when there was one. */
function killUid(uid: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', KILL_UID, 'sh', String(uid)], (err, _out, stderr) => {
      if (!err) return resolve(true);
      const code = (err as { code?: number }).code;
      if (code === 1) return resolve(false);
      if (code === 3) return reject(new Error(`processes of uid ${uid} are still there after SIGKILL`));
      reject(new Error(`pkill failed: ${String(stderr).trim() || err.message}`));
    });
  });
}
