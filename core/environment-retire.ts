/**
 * Taking a deleted environment's host side away, after its row is tombstoned (DELETE /environments/{id} and
 * the daily prune of cancelled projects): its database services are dropped and the retireEnvironment
 * workflow stops what runs.
 */
import type { Deps } from '../system/deps';
import { dropServiceDatabase } from '../host/pg-server';
import { startEnvironmentRetire } from './temporal-starts';

/**
 * After an environment was deleted (its service rows went with it): drops the databases and roles its
 * services had, looked up by their generated names. A failure is logged, never the caller's error.
 */
export async function dropEnvironmentServices(deps: Deps, envId: string, names: string[]): Promise<void> {
  for (const name of names) {
    await dropServiceDatabase(deps.config, { database: name, role: name }).catch((err) =>
      deps.logger.warn({ envId, err: (err as Error).message }, 'could not drop the database of a deleted service'),
    );
  }
}

/**
 * The environment's processes, network and files are taken off its host (`host`: where its web server was placed;
 * null: the worker that takes it) by a workflow (the worker holds them); if Temporal cannot be reached now, the worker retires what is left in retiring_ports when it starts.
 */
export async function startRetire(deps: Deps, environmentId: string, port: number, host: string | null): Promise<void> {
  try {
    await startEnvironmentRetire(deps, environmentId, port, host);
  } catch (err) {
    deps.logger.warn({ err, environmentId }, 'could not start retiring a deleted environment');
  }
}
