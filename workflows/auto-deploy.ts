/**
 * pollAutoDeploys: the auto-deploy poller, one per task queue (workflow id workflowIds.autoDeployPoller),
 * started by the worker. Every round looks at each environment with `auto_deploy` on and starts the deploys
 * due (core/projects/auto-deploy.ts), then sleeps the round's interval (AUTO_DEPLOY_POLL_SECONDS, read by the
 * activity so a changed setting counts from the next round). A failed round is logged and the loop goes on;
 * the history is kept short with continue-as-new.
 */
import { continueAsNew, log, proxyActivities, sleep } from '@temporalio/workflow';
import type { AutoDeployActivities } from '../activities/auto-deploy';
import { profiles } from './profiles';

const { autoDeployRound } = proxyActivities<AutoDeployActivities>(profiles.batch);

const ROUNDS_PER_RUN = 200;
const AFTER_FAILURE_SECONDS = 30;

export async function pollAutoDeploys(): Promise<void> {
  for (let round = 0; round < ROUNDS_PER_RUN; round++) {
    let wait = AFTER_FAILURE_SECONDS;
    try {
      wait = (await autoDeployRound()).sleepSeconds;
    } catch (err) {
      log.warn('auto-deploy round failed', { error: (err as Error).message });
    }
    await sleep(`${wait}s`);
  }
  await continueAsNew<typeof pollAutoDeploys>();
}
