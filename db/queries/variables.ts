/**
 * Variables as both sides need them: the API seals and opens them, the deploy activities read the merged
 * set an environment's processes get. Values are sealed with the console's encryption key; the aad binds a
 * sealed value to its scope and name.
 */
import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { open, seal } from '../../system/crypto';
import type { Secrets } from '../../system/secrets';
import { aad } from '../aad';

type Keys = Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;

export interface VariableScope {
  projectId: string;
  /** null: the project's own variables. */
  environmentId: string | null;
}

export function sealVariable(secrets: Keys, scope: VariableScope, name: string, value: string): string {
  return seal(secrets, value, aad.variable(scope, name));
}

export function openVariable(
  secrets: Keys,
  row: { project_id: string; environment_id: string | null; name: string; value_sealed: string },
): string {
  return open(
    secrets,
    row.value_sealed,
    aad.variable({ projectId: row.project_id, environmentId: row.environment_id }, row.name),
  );
}

export interface EffectiveVariable {
  name: string;
  value: string;
  secret: boolean;
  source: 'project' | 'environment';
  updated_at: Date;
}

/** The set an environment's processes get: the project's variables, each overridden by the environment's own. */
export async function effectiveVariables(
  knex: Knex,
  secrets: Keys,
  environmentId: string,
): Promise<EffectiveVariable[]> {
  // one statement: the environment's project by a subquery (no environment: no rows)
  const rows = await knex('variables')
    .where('project_id', knex('environments').where({ id: environmentId }).select('project_id'))
    .andWhere((q) => q.whereNull('environment_id').orWhere('environment_id', environmentId))
    .orderBy('name');
  const byName = new Map<string, EffectiveVariable>();
  for (const row of rows) {
    const source = row.environment_id ? 'environment' : 'project';
    if (source === 'project' && byName.has(row.name)) continue;
    byName.set(row.name, {
      name: row.name,
      value: openVariable(secrets, row),
      secret: row.secret,
      source,
      updated_at: row.updated_at,
    });
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** What a process gets from the user's variables, and the secret values a task log must not show. */
export async function processVariables(
  knex: Knex,
  secrets: Keys,
  environmentId: string,
): Promise<{ vars: Record<string, string>; secretValues: string[] }> {
  const all = await effectiveVariables(knex, secrets, environmentId);
  return {
    vars: Object.fromEntries(all.map((v) => [v.name, v.value])),
    secretValues: all.filter((v) => v.secret).map((v) => v.value),
  };
}

interface SecretVariableRow {
  project_id: string;
  environment_id: string | null;
  name: string;
  value_sealed: string;
}

/** The secret variables of these projects, each project's own and its environments' (logs/redaction.ts). */
export async function secretVariableRows(knex: Knex, projectIds: string[]): Promise<SecretVariableRow[]> {
  return (await knex('variables')
    .where({ secret: true })
    .whereIn('project_id', projectIds)
    .select('project_id', 'environment_id', 'name', 'value_sealed')) as SecretVariableRow[];
}

/**
 * A keyed digest of the variables a process gets (names and values, in name order): equal sets give equal digests,
 * and it tells nothing of a value (HMAC under a key derived from the encryption key, which every host that starts
 * processes holds). `key` is that encryption key (default: the current one).
 */
function variablesDigest(secrets: Keys, vars: Record<string, string>, key = secrets.encryptionKey.key): string {
  const derived = createHmac('sha256', key).update('vc-variables-digest').digest();
  const entries = Object.entries(vars).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHmac('sha256', derived).update(JSON.stringify(entries)).digest('hex');
}

/**
 * Whether `digest` (a `variables_live` record's) is of exactly `vars`: under the current key, or under a previous
 * one, so that a rotation of the encryption key (docs/encryption-keys.md) leaves applied sets applied.
 */
export function variablesDigestMatches(secrets: Keys, vars: Record<string, string>, digest: string): boolean {
  return [secrets.encryptionKey.key, ...secrets.previousEncryptionKeys.values()].some(
    (key) => variablesDigest(secrets, vars, key) === digest,
  );
}

/** What the environment's live processes were started with (`environments.variables_live`). */
interface VariablesLive {
  digest: string;
  at: string;
}

/**
 * The `variables_live` column's value for processes just started with `vars`; `vars` null: not known (a retried
 * go-live whose processes an earlier attempt started, with what it read then). For an UPDATE that writes the
 * environment's row anyway (a go-live's `live_release_id`).
 */
export function variablesLiveColumn(secrets: Keys, vars: Record<string, string> | null): string | null {
  if (!vars) return null;
  const live: VariablesLive = { digest: variablesDigest(secrets, vars), at: new Date().toISOString() };
  return JSON.stringify(live);
}

/** Records the variables the environment's processes were just started with (null: not known). */
export async function recordVariablesLive(
  knex: Knex,
  secrets: Keys,
  environmentId: string,
  vars: Record<string, string> | null,
): Promise<void> {
  await knex('environments')
    .where({ id: environmentId })
    .update({ variables_live: variablesLiveColumn(secrets, vars) });
}

/** The environment's `variables_live`, and whether anything is live on it. */
export async function variablesLive(
  knex: Knex,
  environmentId: string,
): Promise<{ live: VariablesLive | null; anythingLive: boolean }> {
  const row = await knex('environments').where({ id: environmentId }).first('variables_live', 'live_release_id');
  return { live: (row?.variables_live as VariablesLive | null) ?? null, anythingLive: Boolean(row?.live_release_id) };
}
