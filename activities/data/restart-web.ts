/**
 * The web process restarted after its data changed (a database created, restored, synced, reset; a restore to a
 * second), with the environment's current service variables, when it runs here; said in the task's log. With
 * `taskId` (a restore), the restart records the task's phases.
 */
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import type { TaskLog } from '../toolkit/task-log';
import { withPhases } from '../toolkit/phases';
import { consoleEnv } from '../storage/volume-env';

export async function restartWebAfterData(
  deps: Deps,
  provider: Provider,
  envId: string,
  log: TaskLog,
  taskId?: string,
): Promise<void> {
  const { supervisor } = provider;
  const env = await consoleEnv(deps, provider, envId);
  const r = taskId
    ? await withPhases(deps, taskId, (phases) => {
        phases.mark('release_ready');
        return supervisor.restartWeb(envId, { env, healthTimeoutMs: 30_000, onPhase: (p) => phases.mark(p) });
      })
    : await supervisor.restartWeb(envId, { env, healthTimeoutMs: 30_000 });
  log.line(
    r.ok
      ? r.restarted
        ? '==> Web process restarted'
        : '==> No web process runs here'
      : `==> Web process not restarted: ${r.message}`,
  );
}
