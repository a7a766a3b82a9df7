/** Starting a backup task, by a request (api/backups/task-service.ts) or by the backup window (activities/data/scheduled.ts). */
import { randomUUID } from 'node:crypto';
import type { Deps } from '../../system/deps';
import type { Environment } from '../../db/models/environment';
import { startTask, type TaskRequester } from '../tasks';

type EnvRow = Pick<Environment, 'id' | 'team_id' | 'project_id' | 'name'>;

export async function startBackupTask(
  deps: Deps,
  by: TaskRequester,
  env: EnvRow,
  destinationId: string,
  trigger: 'manual' | 'scheduled',
) {
  const backupId = randomUUID();
  return startTask(deps, by, {
    type: 'backup',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: { backup_id: backupId, destination_id: destinationId, trigger },
    summary: `Backup of ${env.name} (${trigger})`,
  });
}
