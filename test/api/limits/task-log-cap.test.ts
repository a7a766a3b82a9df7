import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../../helpers/deploy-fixtures';

const LIMIT = 64 * 1024;
const t = useTestContext({ worker: true, edge: false, env: { TASK_LOG_LIMIT_BYTES: String(LIMIT) } });

describe('GET /tasks/{id}/log of a task that printed more than TASK_LOG_LIMIT_BYTES', () => {
  it('serves the head up to the cap, one marker line saying how much was dropped, and how the task ended', async () => {
    const w = await createDeployWorld(t);
    // About 1.8 MB of output, then the step fails.
    const loud = `node -e "for (let i = 0; i < 20000; i++) console.log('build line ' + i + ' ' + 'x'.repeat(80))"`;
    w.repo.commit('v2', { buildSteps: [loud, 'exit 3'] });
    const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(res.status).toBe(202);
    const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 90_000 });
    expect(task.status).toBe('failed');

    const text = await taskLog(t, w.api, res.body.id);
    const markers = text.split('\n').filter((l) => /^\[\.\.\. \d+ bytes of output dropped/.test(l));
    expect(markers).toHaveLength(1);
    expect(markers[0]).toMatch(/the task log is limited to 64 KiB \(TASK_LOG_LIMIT_BYTES\)/);
    expect(Number(/\d+/.exec(markers[0])![0])).toBeGreaterThan(1_500_000);
    expect(text).toContain('build line 0 ');
    expect(text).not.toContain('build line 19999 ');
    expect(Buffer.byteLength(text)).toBeLessThan(LIMIT + 4096);
    // The workflow's outcome is kept after the marker.
    expect(text.trimEnd().split('\n').at(-1)).toMatch(/^==> Failed: /);
    const size = await t.deps.knex('task_log_sizes').where({ task_id: res.body.id }).first();
    expect(Number(size.bytes)).toBeLessThanOrEqual(LIMIT + 4096);
  });
});
