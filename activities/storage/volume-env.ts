import type { Deps } from '../../system/deps';
import { environmentVolume } from '../../db/queries/storage';
import type { Provider } from '../../host/provider';
import { serviceEnv } from '../data/service-env';

/**
 * What the environment's web processes and deploy steps get for its volume: VC_VOLUME_PATH, the directory
 * of its `files` disk where it lives now, made ready (owned by the environment's uid) first.
 */
async function volumeEnv(
  deps: Pick<Deps, 'knex' | 'config'>,
  provider: Provider,
  envId: string,
): Promise<{ VC_VOLUME_PATH: string } | Record<string, never>> {
  const env = await deps.knex('environments').where({ id: envId }).first('port');
  if (!env) return {};
  const dir = await environmentVolume(deps.knex, deps.config.storageRoots, envId);
  await provider.prepareVolume(envId, env.port, dir);
  return { VC_VOLUME_PATH: dir };
}

/** Whose the files of the environment's volume are: its uid, or null when tenants run as the worker. */
export async function volumeOwner(
  deps: Pick<Deps, 'knex'>,
  provider: Provider,
  envId: string,
): Promise<{ uid: number; gid: number } | null> {
  const env = await deps.knex('environments').where({ id: envId }).first('port');
  const uid = env ? provider.tenantUid(env.port) : null;
  return uid === null ? null : { uid, gid: uid };
}

/**
 * What the console gives an environment's processes beside the tenant's own variables, as its records say now:
 * its database service's variables (DATABASE_URL, PG*) and its volume (VC_VOLUME_PATH).
 */
export async function consoleEnv(
  deps: Pick<Deps, 'knex' | 'secrets' | 'config'>,
  provider: Provider,
  envId: string,
): Promise<Record<string, string>> {
  return { ...(await serviceEnv(deps, provider, envId)), ...(await volumeEnv(deps, provider, envId)) };
}
