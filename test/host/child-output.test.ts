/**
 * A child that could not be started (no such command here; no memory for a new process or no permission in
 * production: EAGAIN, EACCES) fails the work it was for with what happened, and never ends the worker: the spawn's
 * 'error' came before anyone awaited the child's end, as an unhandled rejection or an 'error' event without a
 * listener (a backup's pg_dump, a restore's pg_restore or `tar -x`, a release's tar).
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { childOutput, closed, started } from '../../host/child-output';
import { finish, spawnSink } from '../../activities/data/child-streams';

const MISSING = '/nonexistent/vc-no-such-command';
const later = () => new Promise((r) => setTimeout(r, 50));

describe('a child that could not be started', () => {
  it('is an error of closed(), naming it, even when awaited only later', async () => {
    const ended = closed(spawn(MISSING, []), 'the dump');
    await later();
    await expect(ended).rejects.toThrow(`the dump could not be started: spawn ${MISSING} ENOENT`);
  });

  it("ends childOutput's reading with that error", async () => {
    const read = async () => {
      for await (const _ of childOutput(spawn(MISSING, []), 'pg_dump')) await later();
    };
    await expect(read()).rejects.toThrow('pg_dump could not be started');
  });

  it('fails a sink when it is finished', async () => {
    const sink = spawnSink(MISSING, []);
    await later();
    await expect(finish(sink, 'pg_restore')).rejects.toThrow(`could not be started: spawn ${MISSING} ENOENT`);
  });

  it('is an error of started(), naming it; a child that runs is started', async () => {
    await expect(started(spawn(MISSING, []), 'haproxy')).rejects.toThrow(
      `haproxy could not be started: spawn ${MISSING} ENOENT`,
    );
    const running = spawn('sh', ['-c', 'exit 0']);
    await expect(started(running, 'sh')).resolves.toBeUndefined();
    await expect(closed(running, 'sh')).resolves.toEqual([0, null]);
  });

  it('does not hide a child that ran: its exit code and signal', async () => {
    await expect(closed(spawn('sh', ['-c', 'exit 3']), 'sh')).resolves.toEqual([3, null]);
  });
});
