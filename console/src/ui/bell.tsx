import { useEffect, useState } from 'preact/hooks';
import { API_BASE, api, ok, quiet } from '../api/client';
import type { Answer } from '../api/types';
import { EtagReader } from '../lib/etag-poll';
import { currentTeamId, readTeams } from '../lib/current-team';

type Notifications = Answer<'getTeamNotifications'>;

/**
 * The notifications bell: tasks waiting and new ends (each shown when there are some), read once the page's own
 * calls have answered, then every 20 s with the ETag.
 */
export function Bell() {
  const [teamId, setTeamId] = useState<string | undefined>(currentTeamId());
  const [data, setData] = useState<Notifications>();
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (teamId) return;
    quiet()
      .then(readTeams)
      .then((t) => setTeamId(t.data[0]?.id))
      .catch(() => undefined);
  }, [teamId]);
  useEffect(() => {
    if (!teamId) return;
    const reader = new EtagReader<Notifications>(`${API_BASE}/teams/${teamId}/notifications`);
    let stop = false;
    const tick = () =>
      reader
        .read()
        .then((r) => !stop && r.changed && setData(r.data))
        .catch(() => undefined);
    // After the page's own calls: the bell does not hold them up.
    void quiet().then(tick);
    const timer = setInterval(tick, 20_000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [teamId]);
  if (!teamId || !data) return null;
  const seen = async () => {
    await ok(api.POST('/teams/{id}/activity/seen', { params: { path: { id: teamId } } })).catch(() => undefined);
    setData({ ...data, finished: { count: 0, data: [] } });
    setOpen(false);
  };
  return (
    <span class="bell">
      <button type="button" class="link" aria-expanded={open} onClick={() => setOpen(!open)}>
        Notifications{data.waiting.count > 0 && <span class="badge">Waiting tasks: {data.waiting.count}</span>}
        {data.finished.count > 0 && <span class="badge">New: {data.finished.count}</span>}
      </button>
      {open && (
        <div class="popover" role="dialog" aria-label="Notifications">
          {[...data.waiting.data, ...data.finished.data].map((n) => (
            <p key={n.task_id}>
              <a href={`/tasks/${n.task_id}`}>{n.summary}</a> <span class={`status ${n.status}`}>{n.status}</span>
            </p>
          ))}
          {data.waiting.count + data.finished.count === 0 && <p class="muted">Nothing new.</p>}
          <button type="button" class="secondary" onClick={seen}>
            Mark as seen
          </button>
        </div>
      )}
    </span>
  );
}
