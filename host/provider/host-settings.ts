/**
 * The host's settings a worker checks when it starts (recorded in its readiness row, reported by GET
 * /health and `npm start`'s banner), instead of a deploy or a service finding them out later:
 * - storage: sandboxed environments run under uids of their own and must traverse every directory above
 *   DATA_DIR (their HOME is under it) and above each of STORAGE_ROOTS (their disks);
 * - services: this host must reach the services server (at SERVICES_HOST) and it must demand a password, else
 *   the sandboxes are not let through to it (sandbox-network.ts) and a database service would time out.
 */
import path from 'node:path';
import type { Config } from '../../system/config';
import type { HostSettings, SettingCheck } from '../../db/queries/worker-settings';
import { servicesTarget, tenantServicesPort } from '../pg-server';
import { closedAbove } from '../traversable';

const ok: SettingCheck = { status: 'ok', reason: null, change: null };

export async function checkHostSettings(
  config: Pick<Config, 'dataDir' | 'storageRoots' | 'servicesDatabaseUrl' | 'databaseUrl' | 'servicesHost'>,
): Promise<HostSettings> {
  return { storage: await checkStorage(config), services: await checkServices(config) };
}

async function checkStorage(config: Pick<Config, 'dataDir' | 'storageRoots'>): Promise<SettingCheck> {
  // Without root the environments run as the worker's own user: nothing to traverse for another uid.
  if (process.getuid?.() !== 0) return ok;
  for (const [setting, dir] of [
    ['DATA_DIR', config.dataDir],
    ...config.storageRoots.map((r) => ['STORAGE_ROOTS', r]),
  ] as const) {
    const closed = await closedAbove(path.resolve(dir));
    if (closed)
      return {
        status: 'problem',
        reason: `${closed.dir} (mode ${closed.mode.toString(8)}) does not let other users through, so environments cannot reach ${dir} (${setting}): their deploys would fail`,
        change: `chmod o+x ${closed.dir}, or set ${setting} to a directory every user can traverse to`,
      };
  }
  return ok;
}

async function checkServices(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl' | 'servicesHost'>,
): Promise<SettingCheck> {
  const found = await tenantServicesPort(config);
  if (found.port !== null || (!found.trusting && !found.reason)) return ok;
  return {
    status: 'problem',
    reason: found.reason ?? 'the services server cannot be reached from the sandboxes',
    change: found.trusting
      ? `make the server on ${servicesTarget(config)}:${found.trusting} demand a password (scram-sha-256 instead of trust in its pg_hba.conf), or set SERVICES_DATABASE_URL to a server that does`
      : "set SERVICES_DATABASE_URL to a PostgreSQL server that answers and demands a password, and SERVICES_HOST to that server's address as this host sees it",
  };
}
