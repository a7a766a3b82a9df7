import { describe, expect, it } from 'vitest';
import { until as untilHolds } from '../helpers/until';
import { useTestContext } from '../helpers/context';
import { createAccessToken, createProject, createTeam, createUser } from '../helpers/fixtures';
import { LogFollower } from '../../console/src/lib/log-follower';

/**
 * The task page's log follower against the real API: it reads GET /tasks/{id}/log from the last offset
 * (X-Log-Seq), shows each piece once and in order as the task writes it, and stops after the read that
 * follows the task's end.
 */
const t = useTestContext();

const until = (what: string, check: () => boolean) => untilHolds(what, check, { intervalMs: 25 });

describe('LogFollower', () => {
  it('follows a running task from the last offset until it ends, each piece once', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const project = await createProject(t, team);
    const token = await createAccessToken(t, user, team);
    const [task] = await t.deps
      .knex('tasks')
      .insert({
        team_id: team.id,
        project_id: project.id,
        kind: 'deployments',
        type: 'deploy',
        status: 'running',
        account_user_id: user.id,
        account_via: 'session',
        workflow_id: `console-follower-${Date.now()}`,
        started_at: new Date(),
      })
      .returning('id');
    const write = (seq: number, chunk: string) => t.deps.knex('task_logs').insert({ task_id: task.id, seq, chunk });
    await write(1, '==> one\n');
    await write(2, '==> two\n');

    const urls: string[] = [];
    const statuses: string[] = [];
    let shown = '';
    const follower = new LogFollower({
      base: t.apiUrl,
      taskId: task.id,
      intervalMs: 100,
      headers: { authorization: `Bearer ${token}` },
      onText: (text) => (shown += text),
      onStatus: (s) => statuses.push(s),
      fetch: (url, init) => {
        urls.push(String(url));
        return fetch(url, init);
      },
    }).start();

    await until('the first two lines', () => shown === '==> one\n==> two\n');
    expect(follower.offset).toBe(2);
    await until('a read from offset 2', () => urls.some((u) => u.endsWith('/log?after=2')));
    await write(3, '==> three\n');
    await until('the third line', () => shown.endsWith('==> three\n'));
    await until('a read from offset 3', () => urls.some((u) => u.endsWith('/log?after=3')));
    // The task ends with a last line: it is read after the end, then the follower stops.
    await write(4, '==> done\n');
    await t.deps.knex('tasks').where({ id: task.id }).update({ status: 'succeeded', finished_at: new Date() });
    expect(await follower.done).toBe('succeeded');
    expect(shown).toBe('==> one\n==> two\n==> three\n==> done\n');
    expect(statuses.at(-1)).toBe('succeeded');
    expect(statuses.slice(0, -1).every((s) => s === 'running')).toBe(true);

    // The first read has no offset; every later one starts from the previous read's X-Log-Seq.
    expect(urls[0]).toBe(`${t.apiUrl}/tasks/${task.id}/log`);
    const offsets = urls.slice(1).map((u) => Number(new URL(u).searchParams.get('after')));
    expect(offsets.every((o, i) => i === 0 || o >= offsets[i - 1])).toBe(true);
    // The last line may be read before or with the end.
    expect([3, 4]).toContain(offsets.at(-1));
    const reads = urls.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(urls.length).toBe(reads);
  });

  it('stops reading when the page goes away', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const token = await createAccessToken(t, user, team);
    const [task] = await t.deps
      .knex('tasks')
      .insert({
        team_id: team.id,
        kind: 'deployments',
        type: 'deploy',
        status: 'pending',
        account_via: 'session',
        workflow_id: `console-follower-stop-${Date.now()}`,
      })
      .returning('id');
    let reads = 0;
    const follower = new LogFollower({
      base: t.apiUrl,
      taskId: task.id,
      intervalMs: 50,
      headers: { authorization: `Bearer ${token}` },
      onText: () => undefined,
      fetch: (url, init) => {
        reads += 1;
        return fetch(url, init);
      },
    }).start();
    await until('two reads', () => reads >= 2);
    follower.stop();
    const after = reads;
    await new Promise((r) => setTimeout(r, 300));
    expect(reads).toBeLessThanOrEqual(after + 1);
  });
});
