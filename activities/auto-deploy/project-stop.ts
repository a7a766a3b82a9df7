/** The activity of stopProjectEnvironments (workflows/project-stop.ts): the local provider stops one environment. */
import type { Deps } from '../../system/deps';
import type { Supervisor } from '../../host/provider/supervisor';

export function createProjectStopActivities(deps: Deps, supervisor: Supervisor) {
  return {
    async stopEnvironment(input: { environmentId: string }): Promise<void> {
      await supervisor.stop(input.environmentId, 'stopped');
      deps.logger.info({ environmentId: input.environmentId }, 'environment stopped (project cancelled)');
    },
  };
}
export type ProjectStopActivities = ReturnType<typeof createProjectStopActivities>;
