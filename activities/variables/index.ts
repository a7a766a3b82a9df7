/**
 * apply_variables on the local provider: the live release's web process is restarted with the
 * environment's current variables, without a build (Supervisor.restartWeb). The log names the variables,
 * never their values; whatever the process prints of a secret shows as `[secret]`.
 */
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { withTaskLog } from '../toolkit/task-log';
import { userFault } from '../toolkit/failures';
import { effectiveVariables, recordVariablesLive } from '../../db/queries/variables';
import { stepEnv, tenantEnv } from '../toolkit/step-env';
import { withHeartbeat } from '../toolkit/heartbeat';
import { consoleEnv } from '../storage/volume-env';
import { withPhases } from '../toolkit/phases';

const HEALTH_TIMEOUT_MS = 60_000;

export function createVariableActivities(deps: Deps, provider: Provider) {
  const { supervisor } = provider;
  return {
    async restartWithVariables(input: {
      taskId: string;
      environmentId: string;
    }): Promise<{ restarted: boolean; variables: number }> {
      return withTaskLog(deps, input.taskId, async (log) => {
        return await withPhases(deps, input.taskId, (phases) =>
          withHeartbeat(async (signal) => {
            const names = (await effectiveVariables(deps.knex, deps.secrets, input.environmentId)).map((v) => v.name);
            const tenant = await tenantEnv(deps, input.environmentId);
            log.line(`==> ${names.length} variable${names.length === 1 ? '' : 's'}: ${names.join(', ') || '(none)'}`);
            phases.mark('release_ready');
            const r = await supervisor.restartWithEnv({
              envId: input.environmentId,
              env: stepEnv(tenant.vars, await consoleEnv(deps, provider, input.environmentId)),
              healthTimeoutMs: HEALTH_TIMEOUT_MS,
              onLine: (_stream, line) => log.line(tenant.redact(line)),
              // cancelled or its worker stopping: the new instance stops, the running ones keep serving
              signal,
              onPhase: (phase) => phases.mark(phase),
            });
            if (!r.ok) throw userFault('RestartFailed', r.message);
            // the processes run with these now (or, with no web process, will at their next start)
            await recordVariablesLive(deps.knex, deps.secrets, input.environmentId, tenant.vars);
            return { restarted: !r.alreadyLive, variables: names.length };
          }),
        );
      });
    },
  };
}

export type VariableActivities = ReturnType<typeof createVariableActivities>;
