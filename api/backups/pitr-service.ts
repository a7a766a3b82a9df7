/**
 * Point-in-time recovery through the API (CONTRACT "Point-in-time recovery"): the recovery window, read from
 * the archive (core/pitr-window.ts), and the restore to a second, a `backups`/`restore` task under the snapshot
 * restore's rules (never a token, the password and a recent sign-in over a protected environment, exclusive).
 */
import type { Deps } from '../../system/deps';
import type { Environment } from '../../db/models/environment';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { startTask } from '../../core/tasks';
import { isoSeconds, recoveryWindow } from '../../core/pitr-window';
import { assertMayOverwrite } from './task-service';

type EnvRow = Pick<Environment, 'id' | 'team_id' | 'project_id' | 'name' | 'protected'>;

export async function getRecoveryWindow(deps: Deps, env: Pick<Environment, 'id'>) {
  const w = await recoveryWindow(deps, env.id);
  return { earliest: isoSeconds(w.earliest), latest: isoSeconds(w.latest) };
}

export async function requestPointInTimeRestore(
  deps: Deps,
  actor: Actor,
  env: EnvRow,
  input: { point_in_time: string; confirm?: boolean; password?: string },
  address: string,
) {
  if (input.confirm !== true)
    throw errors.invalid({ confirm: "must be true: the environment's database is replaced by its past self" });
  const at = new Date(input.point_in_time);
  const w = await recoveryWindow(deps, env.id);
  // whole seconds: the window is given in seconds, and so is the restore
  const second = Math.floor(at.getTime() / 1000) * 1000;
  if (second < w.earliest.getTime() || second > w.latest.getTime())
    throw errors.invalid({
      point_in_time: `must be within the recovery window, ${isoSeconds(w.earliest)} to ${isoSeconds(w.latest)}`,
    });
  await assertMayOverwrite(deps, actor, env, input.password, address);
  const pointInTime = isoSeconds(new Date(second));
  return startTask(deps, actor, {
    type: 'restore',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: { point_in_time: pointInTime },
    summary: `Restore of ${env.name} to ${pointInTime}`,
  });
}
