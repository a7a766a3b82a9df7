/**
 * The edge's settings tables, written by the API (api/edge/) and read by the edge (edge/state.ts, the Basic
 * password's map and checker), and what else the edge reads of the API's tables (environments, domains): `environment_edges` (allowed addresses, the Basic password, stickiness) and
 * `project_edges` (blocked addresses and agents, the rate limit, HSTS, compression, pages). Their triggers
 * notify EDGE_CHANNEL (./edge-routes.ts) on every change, so every edge reloads its state; a write answers
 * once every edge serves it (core/edge-wait.ts).
 */
import type { Knex } from 'knex';

export interface EnvironmentEdgeRow {
  environment_id: string;
  allowed_addresses: string[];
  password_username: string | null;
  /** argon2id, for the API's and the checker's verification. */
  password_hash: string | null;
  /** HMAC of user and password under the edge-password key (system/edge-password.ts), what HAProxy compares. */
  password_digest: string | null;
  password_digest_key_id: string | null;
  stickiness: boolean;
}

export interface ProjectEdgeRow {
  project_id: string;
  blocked_addresses: string[];
  blocked_user_agents: string[];
  rate_limit: { requests: number; per_seconds: number } | null;
  hsts: { max_age: number; include_subdomains: boolean; preload: boolean } | null;
  compression: boolean;
  maintenance_page: string | null;
  error_page: string | null;
}

/** Columns of `environment_edges` a save may set (JSON columns as JSON text). */
export type EnvironmentEdgePatch = Partial<Record<keyof Omit<EnvironmentEdgeRow, 'environment_id'>, unknown>>;
/** Columns of `project_edges` a save may set (JSON columns as JSON text). */
export type ProjectEdgePatch = Partial<Record<keyof Omit<ProjectEdgeRow, 'project_id'>, unknown>>;

export async function environmentEdgeOf(knex: Knex, environmentId: string): Promise<EnvironmentEdgeRow | undefined> {
  return knex('environment_edges').where({ environment_id: environmentId }).first();
}

export async function projectEdgeOf(knex: Knex, projectId: string): Promise<ProjectEdgeRow | undefined> {
  return knex('project_edges').where({ project_id: projectId }).first();
}

/** Creates the environment's row or changes the columns given; the row as saved. */
export async function saveEnvironmentEdge(
  trx: Knex,
  environmentId: string,
  patch: EnvironmentEdgePatch,
): Promise<EnvironmentEdgeRow> {
  const [saved] = await trx('environment_edges')
    .insert({ environment_id: environmentId, ...patch, updated_at: trx.fn.now() })
    .onConflict('environment_id')
    .merge({ ...patch, updated_at: trx.fn.now() })
    .returning('*');
  return saved;
}

/** Creates the project's row or changes the columns given; the row as saved. */
export async function saveProjectEdge(trx: Knex, projectId: string, patch: ProjectEdgePatch): Promise<ProjectEdgeRow> {
  const [saved] = await trx('project_edges')
    .insert({ project_id: projectId, ...patch, updated_at: trx.fn.now() })
    .onConflict('project_id')
    .merge({ ...patch, updated_at: trx.fn.now() })
    .returning('*');
  return saved;
}

/** Every environment's edge settings (the edge's state, edge/state.ts). */
export async function allEnvironmentEdges(knex: Knex): Promise<EnvironmentEdgeRow[]> {
  return knex('environment_edges').select('*');
}

/** Every project's edge settings (the edge's state, edge/state.ts). */
export async function allProjectEdges(knex: Knex): Promise<ProjectEdgeRow[]> {
  return knex('project_edges').select('*');
}

/** The environments with a Basic password: what the edge's password map holds (edge/basic-auth/password-map.ts). */
export async function passwordDigests(
  knex: Knex,
): Promise<Pick<EnvironmentEdgeRow, 'environment_id' | 'password_digest' | 'password_digest_key_id'>[]> {
  return knex('environment_edges')
    .whereNotNull('password_hash')
    .select('environment_id', 'password_digest', 'password_digest_key_id');
}

/**
 * Records the digest of a password the checker verified against its argon2id hash, only while that hash is
 * still the environment's (a password changed meanwhile keeps its own digest).
 */
export async function recordPasswordDigest(
  knex: Knex,
  environmentId: string,
  hash: string,
  digest: { value: string; keyId: string },
): Promise<void> {
  await knex('environment_edges')
    .where({ environment_id: environmentId, password_hash: hash })
    .update({ password_digest: digest.value, password_digest_key_id: digest.keyId });
}

/** What the edge reads of each environment: its public port, its project, and its maintenance. */
export async function edgeEnvironments(
  knex: Knex,
): Promise<
  Array<{ id: string; port: number; project_id: string; maintenance_on: boolean; maintenance_note: string | null }>
> {
  return knex('environments').select('id', 'port', 'project_id', 'maintenance_on', 'maintenance_note');
}

/** The verified domains, by hostname: what the edge routes by Host. */
export async function verifiedDomains(knex: Knex): Promise<Array<{ hostname: string; environment_id: string }>> {
  return knex('domains').where({ status: 'verified' }).select('hostname', 'environment_id');
}
