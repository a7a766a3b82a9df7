import { useLocation } from 'preact-iso';
import type { TaskSummary } from '../api/types';
import { when } from './parts';
import { accountWords, taskLabel } from '../lib/task-label';

/** A list of tasks, each a link to its page. */
export function TaskList({ tasks }: { tasks: TaskSummary[] }) {
  if (tasks.length === 0) return <p class="muted">No tasks yet.</p>;
  return (
    <ul class="list">
      {tasks.map((t) => (
        <li key={t.id}>
          <a href={`/tasks/${t.id}`}>{taskLabel(t.type)}</a> <span class={`status ${t.status}`}>{t.status}</span>{' '}
          <span class="muted">
            {when(t.created_at)} by {t.account.name ?? accountWords(t.account.via)}
          </span>
        </li>
      ))}
    </ul>
  );
}

/** Goes to the page of a task just started (a 202's answer). */
export function useTaskRoute() {
  const { route } = useLocation();
  return (task: { id: string }) => route(`/tasks/${task.id}`);
}
