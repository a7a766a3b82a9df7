import type { EnvironmentEdgeRow, ProjectEdgeRow } from '../../db/queries/edge-settings';

/** The environment edge: the password only as whether it is set and its user name, never a hash or digest. */
export function presentEnvironmentEdge({ edge: row }: { edge: EnvironmentEdgeRow | undefined }) {
  return {
    allowed_addresses: row?.allowed_addresses ?? [],
    password: { enabled: Boolean(row?.password_hash), username: row?.password_hash ? row.password_username : null },
    stickiness: row?.stickiness ?? false,
  };
}

/** The project edge (no row yet: the defaults). */
export function presentProjectEdge({ edge: row }: { edge: ProjectEdgeRow | undefined }) {
  return {
    blocked_addresses: row?.blocked_addresses ?? [],
    blocked_user_agents: row?.blocked_user_agents ?? [],
    rate_limit: row?.rate_limit ?? null,
    hsts: row?.hsts ?? null,
    compression: row?.compression ?? false,
    pages: { maintenance: row?.maintenance_page ?? null, error: row?.error_page ?? null },
  };
}
