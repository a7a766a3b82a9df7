/**
 * The variables the environment's database service gives its deploy steps and web processes: DATABASE_URL
 * and PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE (CONTRACT "Services"). Empty without an available service.
 */
import type { Deps } from '../../system/deps';
import { open } from '../../system/crypto';
import type { Provider } from '../../host/provider';
import { serviceVariables, servicesThroughGateway, type ServiceLogin } from '../../host/pg-server';
import { aad } from '../../db/aad';

/** The login of the environment's postgresql service (password opened), or null. */
export async function serviceLogin(
  deps: Pick<Deps, 'knex' | 'secrets'>,
  envId: string,
  statuses = ['available'],
): Promise<ServiceLogin | null> {
  const row = await deps
    .knex('services')
    .where({ environment_id: envId, kind: 'postgresql' })
    .whereIn('status', statuses)
    .first();
  if (!row) return null;
  return {
    database: row.database_name,
    role: row.role_name,
    password: open(deps.secrets, row.password_sealed, aad.servicePassword(row.id)),
  };
}

/**
 * Where the environment's processes reach the services server: from inside its network namespace, its
 * gateway (the host side of its veth, whose services port the host DNATs to SERVICES_HOST, the server's address as
 * this host sees it); without a namespace, SERVICES_HOST itself.
 */
export async function serviceHost(
  deps: Pick<Deps, 'knex' | 'config'>,
  provider: Provider,
  envId: string,
): Promise<string> {
  if (provider.isolation().mode !== 'namespaces' || !servicesThroughGateway(deps.config))
    return deps.config.servicesHost;
  const env = await deps.knex('environments').where({ id: envId }).first('port');
  return (env && provider.gateway(env.port)) || deps.config.servicesHost;
}

export async function serviceEnv(
  deps: Pick<Deps, 'knex' | 'secrets' | 'config'>,
  provider: Provider,
  envId: string,
): Promise<Record<string, string>> {
  const login = await serviceLogin(deps, envId);
  return login ? serviceVariables(deps.config, login, await serviceHost(deps, provider, envId)) : {};
}
