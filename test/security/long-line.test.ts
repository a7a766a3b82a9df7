import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_LINE } from '../../host/provider/run-step';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../helpers/deploy-fixtures';

/**
 * Issue 16, item 6, as a tenant would do it: a build step prints 60 MB without a newline, then keeps its line
 * open (it waits for a gate). The worker cuts the line at MAX_LINE while reading it: the cut line is in the
 * task log while the step still prints into it, which it can only be if the worker did not wait for the
 * line's end (holding all of it) to pass it on. On code that joins chunks until a newline, nothing of that line
 * reaches the log before the step ends, and the worker holds all 60 MB meanwhile.
 */
const t = useTestContext({ worker: true, edge: false });
const SIXTY_MB = 60 * 1024 * 1024;

describe('a build step printing 60 MB without a newline', () => {
  it('the line is cut at the fixed length as it is read; the log holds it once, then what follows', {
    timeout: 300_000,
  }, async () => {
    const w = await createDeployWorld(t);
    w.repo.commit('v2', {
      buildSteps: [
        `head -c ${SIXTY_MB} /dev/zero | tr '\\0' x; while [ ! -f '${w.repo.gate}' ]; do sleep 0.1; done; echo; echo after-the-long-line`,
      ],
    });
    const res = await w.api.post(`/environments/${w.environment.id}/deploy`, {});
    expect(res.status, res.text).toBe(202);
    const id = res.body.id as string;
    const cut = `${'x'.repeat(MAX_LINE)}…`;
    // The step is still inside its line (it waits for the gate): the cut line must be in the log already.
    const deadline = Date.now() + 120_000;
    let log = '';
    while (!log.includes(cut)) {
      if (Date.now() > deadline)
        throw new Error(`the cut line never reached the log while the step ran:\n${log.slice(-500)}`);
      const task = await waitForTask(t, w.api, id, { timeoutMs: 5_000, until: () => true });
      expect(task.status).not.toMatch(/succeeded|failed|cancelled/);
      await new Promise((r) => setTimeout(r, 500));
      log = await taskLog(t, w.api, id);
    }
    writeFileSync(w.repo.gate, '');
    const task = await waitForTask(t, w.api, id, { timeoutMs: 180_000 });
    log = await taskLog(t, w.api, id);
    expect(task.status, log.slice(-2000)).toBe('succeeded');
    const lines = log.split('\n');
    const long = lines.filter((l) => l.startsWith('xxxx'));
    expect(long).toEqual([cut]);
    expect(lines[lines.indexOf(cut) + 1]).toBe('after-the-long-line');
    expect(log.length).toBeLessThan(64 * 1024);
  });
});
