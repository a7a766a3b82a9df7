/** The activity of stopProjectEnvironments (workflows/project-stop.ts): the local provider stops one environment. */
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';

export function createProjectStopActivities(deps: Deps, provider: Provider) {
  const { supervisor } = provider;
  return {
    async stopEnvironment(input: { environmentId: string }): Promise<void> {
      await supervisor.stop(input.environmentId, 'stopped');
      deps.logger.info({ environmentId: input.environmentId }, 'environment stopped (project cancelled)');
    },
  };
}
export type ProjectStopActivities = ReturnType<typeof createProjectStopActivities>;
