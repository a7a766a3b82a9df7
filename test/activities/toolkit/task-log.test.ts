import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { appendLogChunk, createTaskLog } from '../../../activities/toolkit/task-log';
import { useTestContext } from '../../helpers/context';
import { createTeam, createUser } from '../../helpers/fixtures';

const t = useTestContext();
const LIMIT = 4096;

async function newTask() {
  const team = await createTeam(t, await createUser(t));
  const id = randomUUID();
  await t.deps.knex('tasks').insert({
    id,
    team_id: team.id,
    kind: 'deployments',
    type: 'deploy',
    account_via: 'token',
    workflow_id: `wf-${id}`,
    status: 'running',
  });
  return id;
}

async function logOf(id: string) {
  const rows = await t.deps.knex('task_logs').where({ task_id: id }).orderBy('seq');
  return rows.map((r: { chunk: string }) => r.chunk).join('');
}

const line = (writer: string, i: number) => `${writer} line ${String(i).padStart(4, '0')} ${'x'.repeat(40)}`;

describe('the task log cap (TASK_LOG_LIMIT_BYTES)', () => {
  it('keeps the head up to the cap across activities of one task, with one marker line counting what was dropped', async () => {
    const id = await newTask();
    // Two activities of one task (a build, then a deploy step; or a retry), each with its own writer.
    for (const writer of ['build', 'deploy']) {
      const log = createTaskLog(t.deps.knex, id, { limitBytes: LIMIT, maxLines: 7 });
      for (let i = 0; i < 100; i++) log.line(line(writer, i));
      await log.close();
    }
    const text = await logOf(id);
    const lineBytes = line('build', 0).length + 1;
    const keptLines = Math.floor(LIMIT / lineBytes);
    const markers = text.split('\n').filter((l) => l.startsWith('[...'));
    const written = 100 * lineBytes + 100 * (lineBytes + 1); // 'deploy' is one letter longer than 'build'
    expect(markers).toEqual([
      `[... ${written - keptLines * lineBytes} bytes of output dropped: the task log is limited to 4 KiB (TASK_LOG_LIMIT_BYTES) ...]`,
    ]);
    expect(text.startsWith(`${line('build', 0)}\n`)).toBe(true);
    expect(text).toContain(line('build', keptLines - 1));
    expect(text).not.toContain(line('build', keptLines));
    expect(text).not.toContain('deploy line');
    expect(text.endsWith(`${markers[0]}\n`)).toBe(true);
    expect(Buffer.byteLength(text.replace(`${markers[0]}\n`, ''))).toBeLessThanOrEqual(LIMIT);
  });

  it("keeps the workflow's own lines (the outcome) after the marker", async () => {
    const id = await newTask();
    await appendLogChunk(t.deps.knex, id, 'y'.repeat(LIMIT - 1) + '\n', { limitBytes: LIMIT });
    await appendLogChunk(t.deps.knex, id, 'one line too many\n', { limitBytes: LIMIT });
    await appendLogChunk(t.deps.knex, id, '==> Deploy succeeded\n', { limitBytes: LIMIT, always: true });
    await appendLogChunk(t.deps.knex, id, 'and more output\n', { limitBytes: LIMIT });
    const text = await logOf(id);
    expect(text.split('\n').slice(1)).toEqual([
      `[... ${'one line too many\n'.length + 'and more output\n'.length} bytes of output dropped: the task log is limited to 4 KiB (TASK_LOG_LIMIT_BYTES) ...]`,
      '==> Deploy succeeded',
      '',
    ]);
  });

  it('counts multi-byte characters as bytes and keeps concurrent writers of one task exact', async () => {
    const id = await newTask();
    const chunk = `${'é'.repeat(99)}\n`; // 199 bytes
    await Promise.all(Array.from({ length: 40 }, () => appendLogChunk(t.deps.knex, id, chunk, { limitBytes: LIMIT })));
    const text = await logOf(id);
    const kept = Math.floor(LIMIT / 199);
    expect(text.split('\n').filter((l) => l.startsWith('é'))).toHaveLength(kept);
    expect(text).toContain(`[... ${(40 - kept) * 199} bytes of output dropped`);
    const seqs = (await t.deps.knex('task_logs').where({ task_id: id }).orderBy('seq')).map(
      (r: { seq: number }) => r.seq,
    );
    expect(seqs).toEqual(seqs.map((_: number, i: number) => i + 1));
  });
});

describe('the task log backlog (what is buffered or on its way to the database)', () => {
  it('stays bounded: lines printed past it before the database took them are dropped and counted in one line', async () => {
    const id = await newTask();
    const log = createTaskLog(t.deps.knex, id, { maxBacklogBytes: 10_000, maxLines: 5 });
    const big = (i: number) => `${String(i).padStart(4, '0')} ${'y'.repeat(995)}`; // 1000 characters
    // All at once, as a step's pipe delivers them: nothing is stored before the last one is handed over.
    for (let i = 0; i < 100; i++) log.line(big(i));
    await log.close();
    const lines = (await logOf(id)).split('\n').filter(Boolean);
    const kept = lines.filter((l) => !l.startsWith('[...'));
    expect(kept).toEqual(Array.from({ length: 9 }, (_, i) => big(i)));
    expect(lines.at(-1)).toBe(
      `[... ${91 * 1001} characters of output dropped: printed faster than the task log could store them ...]`,
    );
  });

  it('keeps everything when the database keeps up', async () => {
    const id = await newTask();
    const log = createTaskLog(t.deps.knex, id, { maxBacklogBytes: 10_000, maxLines: 5 });
    for (let i = 0; i < 30; i++) {
      log.line(`${i} ${'z'.repeat(995)}`);
      await log.flush();
    }
    await log.close();
    const text = await logOf(id);
    expect(text.split('\n').filter(Boolean)).toHaveLength(30);
    expect(text).not.toContain('[...');
  });
});
