/**
 * A task's phases as an activity reaches them (db/queries/task-phases.ts): `mark` notes the moment, the
 * marks are written once when the activity's work ends (one statement, off the path), and a mark after
 * that (`old_stopped`: the old instances stop after the task succeeded) is written at once.
 */
import type { Deps } from '../../system/deps';
import { recordTaskPhases, type TaskPhase } from '../../db/queries/task-phases';

interface PhaseLog {
  mark(phase: TaskPhase): void;
}

export async function withPhases<T>(deps: Deps, taskId: string, fn: (phases: PhaseLog) => Promise<T>): Promise<T> {
  const noted: Partial<Record<TaskPhase, string>> = {};
  let open = true;
  const phases: PhaseLog = {
    mark(phase) {
      const at = new Date().toISOString();
      if (open) noted[phase] = at;
      else void recordTaskPhases(deps.knex, taskId, { [phase]: at }).catch(() => undefined);
    },
  };
  try {
    return await fn(phases);
  } finally {
    open = false;
    await recordTaskPhases(deps.knex, taskId, noted);
  }
}
