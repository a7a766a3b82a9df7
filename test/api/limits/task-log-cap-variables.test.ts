/**
 * TASK_LOG_LIMIT_BYTES holds for every task, not only deploys and builds: an apply_variables task whose
 * log would pass a small cap keeps its head and one marker line.
 */
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';

const LIMIT = 2 * 1024;
const t = useTestContext({ worker: true, edge: false, env: { TASK_LOG_LIMIT_BYTES: String(LIMIT) } });

describe('GET /tasks/{id}/log of a configuration task that printed more than TASK_LOG_LIMIT_BYTES', () => {
  it('keeps the head within the cap and one marker line where the rest was dropped', async () => {
    const w = await createDeployWorld(t);
    const deploy = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(deploy.status, deploy.text).toBe(202);
    const deployed = await waitForTask(t, w.api, deploy.body.id, { timeoutMs: 90_000 });
    expect(deployed.status, deployed.error ?? '').toBe('succeeded');

    // 100 names of 40 characters: the activity's line naming them is about 4 KiB, twice the cap.
    const names = Array.from(
      { length: 100 },
      (_, i) => `A_RATHER_LONG_VARIABLE_NAME_NUMBER_${String(i).padStart(4, '0')}`,
    );
    const owner = await sessionAgent(t, w.owner);
    const imported = await owner.post(`/environments/${w.environment.id}/variables/import`, {
      text: names.map((n) => `${n}=x`).join('\n'),
    });
    expect(imported.status, imported.text).toBeLessThan(300);

    const res = await owner.post(`/environments/${w.environment.id}/variables/apply`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ kind: 'configuration', type: 'apply_variables' });
    const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 90_000 });
    expect(task.status, task.error ?? '').toBe('succeeded');

    const text = await taskLog(t, w.api, res.body.id);
    const markers = text.split('\n').filter((l) => /^\[\.\.\. \d+ bytes of output dropped/.test(l));
    expect(markers, text).toHaveLength(1);
    expect(markers[0]).toMatch(/the task log is limited to 2 KiB \(TASK_LOG_LIMIT_BYTES\)/);
    expect(Number(/\d+/.exec(markers[0])![0])).toBeGreaterThan(LIMIT);
    // The head is kept (the workflow's heading), the line past the cap is not.
    expect(text).toContain('==> Restarting the web process with the current variables');
    expect(text).not.toContain(names[0]);
    // Later output of the activity stays dropped: the marker ends the log.
    expect(text.trimEnd().split('\n').at(-1)).toBe(markers[0]);
    const size = await t.deps.knex('task_log_sizes').where({ task_id: res.body.id }).first();
    expect(Number(size.bytes)).toBeLessThanOrEqual(LIMIT);
    expect(Buffer.byteLength(text)).toBeLessThan(LIMIT + 512);
  });
});
