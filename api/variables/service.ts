/**
 * Variables of projects and environments (CONTRACT "Variables"). Every write locks the project's row, so
 * the 500-a-scope count and the all-or-nothing import see no concurrent change. Values are sealed at rest
 * (db/queries/variables.ts) and secrets leave only as null (./presenter.ts).
 */
import type { Knex } from 'knex';
import type { Deps } from '../../system/deps';
import type { Variable } from '../../db/models/variable';
import {
  effectiveVariables,
  openVariable,
  sealVariable,
  type VariableScope,
  variablesDigestMatches,
  variablesLive,
} from '../../db/queries/variables';
import { errors } from '../../core/errors';
import type { Actor } from '../../core/actor';
import { recordActivity } from '../../db/queries/activity';
import { parseDotenv } from './dotenv';
import { MAX_PER_SCOPE } from './rules';
import { assertEnvironmentsFit } from './env-size';

/** A scope the caller has been authorized for (see ./scopes.ts). */
export interface Scope extends VariableScope {
  teamId: string;
}

function scoped(q: Knex.QueryBuilder, scope: VariableScope): Knex.QueryBuilder {
  q.where({ project_id: scope.projectId });
  return scope.environmentId ? q.where({ environment_id: scope.environmentId }) : q.whereNull('environment_id');
}

async function lockProject(trx: Knex.Transaction, projectId: string): Promise<void> {
  await trx('projects').where({ id: projectId }).forUpdate().first('id');
}

async function countIn(trx: Knex.Transaction, scope: VariableScope): Promise<number> {
  const row = await scoped(trx('variables'), scope).count<{ n: string }[]>({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

const tooMany = (field: string, count: number) =>
  errors.invalid({ [field]: `would make ${count} variables here; at most ${MAX_PER_SCOPE} are allowed in one scope` });

/** The scope's own variables, by name (GET /projects/{id}/variables). */
export async function listOwn(deps: Deps, scope: Scope) {
  const rows = (await scoped(deps.knex('variables'), scope).orderBy('name')) as Variable[];
  return rows.map((row) => ({ ...row, value: openVariable(deps.secrets, row) }));
}

/**
 * The set the environment's processes get, each with its source (GET /environments/{id}/variables), and whether its
 * live processes run with exactly it: `applied` false after a change until an apply or a deploy starts them with
 * it; `live` null when nothing is live or it is not known.
 */
export async function listEffective(deps: Deps, environmentId: string) {
  const [list, { live, anythingLive }] = await Promise.all([
    effectiveVariables(deps.knex, deps.secrets, environmentId),
    variablesLive(deps.knex, environmentId),
  ]);
  const vars = Object.fromEntries(list.map((v) => [v.name, v.value]));
  return {
    variables: list,
    live:
      anythingLive && live
        ? { applied: variablesDigestMatches(deps.secrets, vars, live.digest), since: live.at }
        : null,
  };
}

export async function getEffective(deps: Deps, environmentId: string, name: string) {
  const found = (await effectiveVariables(deps.knex, deps.secrets, environmentId)).find((v) => v.name === name);
  if (!found) throw errors.notFound('variable');
  return found;
}

const where = (scope: Scope) => (scope.environmentId ? 'the environment' : 'the project');

/** The activity event of a variable change (never a value). */
function event(trx: Knex.Transaction, actor: Actor, scope: Scope, type: string, summary: string) {
  return recordActivity(trx, {
    teamId: scope.teamId,
    actor,
    kind: 'configuration',
    type,
    projectId: scope.projectId,
    environmentId: scope.environmentId,
    summary,
  });
}

/** Creates or replaces one variable; `created` tells 201 from 200. A replace without `secret` keeps the flag. */
export async function setVariable(
  deps: Deps,
  actor: Actor,
  scope: Scope,
  input: { name: string; value: string; secret?: boolean },
) {
  return deps.knex.transaction(async (trx) => {
    await lockProject(trx, scope.projectId);
    await event(trx, actor, scope, 'variable_set', `set ${input.name} on ${where(scope)}`);
    const existing = (await scoped(trx('variables'), scope).where({ name: input.name }).first()) as
      | Variable
      | undefined;
    const value_sealed = sealVariable(deps.secrets, scope, input.name, input.value);
    if (existing) {
      const [row] = await trx('variables')
        .where({ id: existing.id })
        .update({ value_sealed, secret: input.secret ?? existing.secret, updated_at: trx.fn.now() })
        .returning('*');
      await assertEnvironmentsFit(trx, scope, 'value');
      return { created: false, variable: { ...row, value: input.value } };
    }
    const count = await countIn(trx, scope);
    if (count + 1 > MAX_PER_SCOPE) throw tooMany('name', count + 1);
    const [row] = await trx('variables')
      .insert({
        team_id: scope.teamId,
        project_id: scope.projectId,
        environment_id: scope.environmentId,
        name: input.name,
        value_sealed,
        secret: input.secret ?? false,
      })
      .returning('*');
    await assertEnvironmentsFit(trx, scope, 'value');
    return { created: true, variable: { ...row, value: input.value } };
  });
}

/** Removes the scope's own value; 404 when it has none. */
export async function deleteVariable(deps: Deps, actor: Actor, scope: Scope, name: string): Promise<void> {
  await deps.knex.transaction(async (trx) => {
    const n = await scoped(trx('variables'), scope).where({ name }).delete();
    if (n === 0) throw errors.notFound('variable');
    await event(trx, actor, scope, 'variable_deleted', `deleted ${name} from ${where(scope)}`);
  });
}

/** POST /variables/parse: what an import would read, saving nothing. */
export function parseText(text: string) {
  const parsed = parseDotenv(text);
  if (!parsed.ok) throw errors.invalid({ text: `line ${parsed.line}: ${parsed.reason}` });
  return { data: parsed.data };
}

/** Whether an imported name is to be secret (undefined: not said); a listed name missing from the text is 422. */
function secretChoice(secret: boolean | string[] | undefined, names: string[]): (name: string) => boolean | undefined {
  if (!Array.isArray(secret)) return () => secret;
  const missing = secret.filter((n) => !names.includes(n));
  if (missing.length > 0) throw errors.invalid({ secret: `not in the text: ${missing.join(', ')}` });
  const listed = new Set(secret);
  return (name) => listed.has(name);
}

/**
 * Saves what parse reads, all or nothing: new names are created; an existing name is skipped unless
 * `overwrite`, then updated when its value or secret flag changes, else unchanged.
 */
export async function importVariables(
  deps: Deps,
  actor: Actor,
  scope: Scope,
  input: { text: string; secret?: boolean | string[]; overwrite?: boolean },
) {
  const { data } = parseText(input.text);
  const secretOf = secretChoice(
    input.secret,
    data.map((d) => d.name),
  );
  return deps.knex.transaction(async (trx) => {
    await lockProject(trx, scope.projectId);
    const existing = new Map<string, Variable>();
    for (const row of (await scoped(trx('variables'), scope).whereIn(
      'name',
      data.map((d) => d.name),
    )) as Variable[]) {
      existing.set(row.name, row);
    }
    const result = {
      created: [] as string[],
      updated: [] as string[],
      unchanged: [] as string[],
      skipped: [] as string[],
    };
    const created = data.filter((d) => !existing.has(d.name));
    const count = await countIn(trx, scope);
    if (count + created.length > MAX_PER_SCOPE) throw tooMany('text', count + created.length);
    for (const d of data) {
      const row = existing.get(d.name);
      const value_sealed = sealVariable(deps.secrets, scope, d.name, d.value);
      if (!row) {
        await trx('variables').insert({
          team_id: scope.teamId,
          project_id: scope.projectId,
          environment_id: scope.environmentId,
          name: d.name,
          value_sealed,
          secret: secretOf(d.name) ?? false,
        });
        result.created.push(d.name);
      } else if (!input.overwrite) {
        result.skipped.push(d.name);
      } else {
        const secret = secretOf(d.name) ?? row.secret;
        if (openVariable(deps.secrets, row) === d.value && secret === row.secret) {
          result.unchanged.push(d.name);
          continue;
        }
        await trx('variables').where({ id: row.id }).update({ value_sealed, secret, updated_at: trx.fn.now() });
        result.updated.push(d.name);
      }
    }
    if (result.created.length + result.updated.length > 0) {
      await assertEnvironmentsFit(trx, scope, 'text');
      const summary = `imported variables into ${where(scope)}: ${result.created.length} created, ${result.updated.length} updated`;
      await event(trx, actor, scope, 'variables_imported', summary);
    }
    return result;
  });
}
