import type { Environment } from '../../db/models/environment';
import { environmentUrl, type Config } from '../../system/config';
import { iso, isoOrNull } from '../../core/time';

/** An environment as the services hand it out: the row plus its public address. */
export type EnvironmentRecord = Environment & { url: string };

/** Attaches the address to a loaded row (see findEnvironment in ./service). */
export function withUrl(config: Pick<Config, 'environmentHost'>, env: Environment): EnvironmentRecord {
  return Object.assign(env, { url: environmentUrl(config, env.port) });
}

/**
 * The one presenter of an environment. Other areas add their fields through `extra` (e.g. the deploy
 * state); the internal port and live release id stay out of it unless an area adds them on purpose.
 */
export function presentEnvironment(env: EnvironmentRecord, extra: Record<string, unknown> = {}) {
  return {
    id: env.id,
    project_id: env.project_id,
    team_id: env.team_id,
    name: env.name,
    git_ref: env.git_ref,
    auto_deploy: env.auto_deploy,
    url: env.url,
    protected: env.protected ?? false,
    created_at: iso(env.created_at),
    maintenance: {
      on: env.maintenance_on ?? false,
      note: env.maintenance_note ?? null,
      since: isoOrNull(env.maintenance_since),
    },
    ...extra,
  };
}
