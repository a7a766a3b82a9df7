import { api, ok } from '../api/client';
import { useLoad } from './hooks';
import { taskLabel } from '../lib/task-label';

/** The task a 409 names, as a link: its type and status once read (its id until then, or if it cannot be). */
export function RunningTask({ id }: { id: string }) {
  const task = useLoad(() => ok(api.GET('/tasks/{id}', { params: { path: { id } } })), [id]);
  const t = task.data;
  return (
    <p>
      Running task:{' '}
      <a href={`/tasks/${id}`}>
        {t ? `${taskLabel(t.type)} (${t.status}${t.account.name ? `, asked by ${t.account.name}` : ''}), ` : ''}
        {id}
      </a>
    </p>
  );
}
