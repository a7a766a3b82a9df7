import type { Knex } from 'knex';
import { workerSettings } from '../db/queries/worker-settings';
import { WORKER_STALE_MS } from '../core/worker-readiness';

/** `npm start`'s banner: one line for each host setting the worker found wrong, saying what to change. */
export async function settingsAdvice(knex: Knex, identity: string): Promise<string[]> {
  const settings = await workerSettings(knex, { staleMs: WORKER_STALE_MS, identity }).catch(() => null);
  if (!settings) return [];
  return Object.values(settings)
    .filter((c) => c.status !== 'ok')
    .map((c) => `${c.reason}: ${c.change}.`);
}
