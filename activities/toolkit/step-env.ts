import type { Deps } from '../../system/deps';
import { processVariables } from '../../db/queries/variables';
import { secretRedactor } from '../../system/redact';

/**
 * The environment of build steps, deploy steps and web processes: the user's variables, then a minimal,
 * fixed set on top (built-ins win; no worker setting such as DATABASE_URL, keys or DATA_DIR, nor the
 * worker's HOME or TMPDIR, leaks into a user's commands; the sandbox sets the environment's own HOME).
 * Values are never printed.
 */
export function stepEnv(
  userVars: Record<string, string> = {},
  builtIns: Record<string, string> = {},
): Record<string, string | undefined> {
  const base: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: process.env.LANG ?? 'C.UTF-8',
  };
  return { ...userVars, ...base, ...builtIns };
}

/**
 * What an environment's processes get now (variables merged under the built-ins) and its log redactor: a
 * task log line with every secret value (each of its lines, and its base64 forms) replaced by `[secret]`.
 */
export async function tenantEnv(deps: Pick<Deps, 'knex' | 'secrets'>, environmentId: string) {
  const { vars, secretValues } = await processVariables(deps.knex, deps.secrets, environmentId);
  return { vars, env: stepEnv(vars), redact: secretRedactor(secretValues) };
}
