/**
 * The size rule of CONTRACT "Variables": the whole environment a process gets (every scope and the
 * built-ins) is at most 1 MiB, since past the kernel's limit every start fails (`spawn E2BIG`). A write or
 * import is checked, inside its transaction and after its changes, against every environment it reaches:
 * a project's variables reach each environment of the project (and any environment added later, so the
 * project's own set must fit alone too); an environment's reach that environment.
 */
import type { Knex } from 'knex';
import type { VariableScope } from '../../db/queries/variables';
import { scopeEnvironments } from '../../db/queries/environments';
import { sealedLength } from '../../system/crypto';
import { errors } from '../../core/errors';
import { environmentEntryBytes, MAX_ENVIRONMENT_BYTES, MAX_USER_ENVIRONMENT_BYTES } from './rules';

const kib = (bytes: number) => `${Math.ceil(bytes / 1024)} KiB`;

/** Throws 422 naming `field` when an environment the scope reaches would get more than it may. */
export async function assertEnvironmentsFit(trx: Knex.Transaction, scope: VariableScope, field: string) {
  const rows = (await trx('variables')
    .where({ project_id: scope.projectId })
    .select('environment_id', 'name', 'value_sealed')) as Array<{
    environment_id: string | null;
    name: string;
    value_sealed: string;
  }>;
  const project = new Map<string, number>();
  const own = new Map<string, Map<string, number>>();
  for (const r of rows) {
    const bytes = environmentEntryBytes(r.name, sealedLength(r.value_sealed));
    if (r.environment_id === null) project.set(r.name, bytes);
    else {
      let m = own.get(r.environment_id);
      if (!m) own.set(r.environment_id, (m = new Map()));
      m.set(r.name, bytes);
    }
  }
  const reached = await scopeEnvironments(trx, scope.projectId, scope.environmentId);
  const sets: Array<{ label: string; names: Map<string, number> }> = reached.map((e) => ({
    label: `the variables of environment "${e.name}"`,
    names: new Map([...project, ...(own.get(e.id) ?? [])]),
  }));
  if (!scope.environmentId) sets.push({ label: "the project's own variables", names: project });
  for (const { label, names } of sets) {
    let total = 0;
    for (const bytes of names.values()) total += bytes;
    if (total > MAX_USER_ENVIRONMENT_BYTES) {
      throw errors.invalid(
        {
          [field]:
            `would make ${label} ${kib(total)}; a process's whole environment is at most ` +
            `${kib(MAX_ENVIRONMENT_BYTES)}, of which ${kib(MAX_USER_ENVIRONMENT_BYTES)} for variables`,
        },
        'The variables would not fit in the environment of a process',
      );
    }
  }
}
