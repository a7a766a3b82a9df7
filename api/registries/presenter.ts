import type { RegistryRow } from './service';

/** A registry login: its host and user name, never its password. */
export const presentRegistry = (r: RegistryRow) => ({
  host: r.host,
  username: r.username,
  created_at: r.created_at.toISOString(),
});
