import type { Deps } from '../../system/deps';
import { Task } from '../../db/models/task';
import { presentTask } from './presenter';

type Row = Task & { account_name: string | null };

/** Tasks as they are now, presented in the given order: one task, or `{data: [...]}` (idempotent replays). */
export async function replayTasks(deps: Deps, ids: string[], single: boolean): Promise<unknown> {
  const rows = (await Task.query(deps.knex)
    .select('tasks.*', 'users.name as account_name')
    .leftJoin('users', 'users.id', 'tasks.account_user_id')
    .whereIn('tasks.id', ids)) as Row[];
  const byId = new Map(rows.map((r) => [r.id, presentTask(r, { id: r.account_user_id, name: r.account_name })]));
  const tasks = ids.map((id) => byId.get(id)).filter(Boolean);
  return single ? tasks[0] : { data: tasks };
}
