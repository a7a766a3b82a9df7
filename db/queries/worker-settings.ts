import type { Knex } from 'knex';

/** One host setting as a worker found it: fine, or what is wrong and what to change. */
export interface SettingCheck {
  status: 'ok' | 'problem';
  reason: string | null;
  /** The setting to change, said for an operator. */
  change: string | null;
}

/** What a worker records in its readiness row (worker_heartbeats.settings) when it starts. */
export interface HostSettings {
  /** Every directory above DATA_DIR and each of STORAGE_ROOTS lets the environments' uids through. */
  storage: SettingCheck;
  /** The services server demands a password, so that the sandboxes may reach it. */
  services: SettingCheck;
}

/**
 * The settings of the freshest ready worker (seen within `staleMs`), of the given one, or of the freshest of
 * `host` (HOST_NAME); null when none.
 */
export async function workerSettings(
  knex: Knex,
  opts: { staleMs: number; identity?: string; host?: string },
): Promise<HostSettings | null> {
  const q = knex('worker_heartbeats').whereNotNull('settings').orderBy('seen_at', 'desc').first('settings');
  if (opts.identity) q.where({ identity: opts.identity });
  else q.where('seen_at', '>', knex.raw(`now() - make_interval(secs => ?)`, [opts.staleMs / 1000]));
  if (opts.host) q.where({ host: opts.host });
  const row = (await q) as { settings: HostSettings } | undefined;
  return row?.settings ?? null;
}
