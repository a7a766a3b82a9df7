/**
 * One failure rule (issue 29): a restart whose new instance does not come up healthy fails its task with the
 * supervisor's words (a non-retryable `RestartFailed` user fault thrown by the activity, no `{ok: false}`
 * result), and the running instance keeps serving. Reboot, resize, scale and a variables apply each restart
 * the web process; here every new start of the app exits at once (a flag file in a directory the sandboxes
 * see), while the instance started before the flag keeps answering. A resize names the plan the server keeps.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { sessionAgent } from '../helpers/fixtures';
import {
  commitServer,
  createDeployWorld,
  fetchEnvironment,
  runTaskOk,
  SERVER_JS,
  taskLog,
  waitForTask,
} from '../helpers/deploy-fixtures';
import { createEnvironmentMachines } from '../../api/machines/service';
import type { Agent } from '../helpers/http';

const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let server: { id: string; name: string; plan: string; instances: number };
let boot: string;

beforeAll(async () => {
  w = await createDeployWorld(t);
  const flag = join(dirname(w.repo.gate), 'no-more-starts');
  commitServer(
    w.repo,
    `if (require('node:fs').existsSync(${JSON.stringify(flag)})) process.exit(3);\n${SERVER_JS}`,
    'v1',
  );
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
  await runTaskOk(t, w.api, `/environments/${w.environment.id}/deploy`, {}, 120_000);
  server = await t.deps.knex('servers').where({ environment_id: w.environment.id, role: 'web' }).first();
  owner = await sessionAgent(t, w.owner);
  boot = (await fetchEnvironment(w.environment.port, '/boot')).text;
  // from here on, every new start of the app exits before it answers
  writeFileSync(flag, '');
}, 180_000);

async function failed(res: { status: number; text: string; body: { id: string } }) {
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 100_000 });
  const log = await taskLog(t, owner, task.id);
  expect(task.status, log).toBe('failed');
  // the supervisor's words, as the log's last line says them: never a result object's
  expect(task.error).toBeTruthy();
  expect(task.error).not.toMatch(/\[object|ok: false|ApplicationFailure/);
  expect(log).toContain(`==> Failed: ${task.error}`);
  // the instance started before the flag still answers, the same process
  expect(await fetchEnvironment(w.environment.port, '/boot')).toEqual({ status: 200, text: boot });
  return task;
}

describe('a restart that does not come up healthy', { timeout: 240_000 }, () => {
  it('a resize fails naming the plan the server keeps, and the plan stays', async () => {
    const task = await failed(await owner.post(`/servers/${server.id}/resize`, { plan: 'medium' }));
    expect(task.error!.endsWith(`; ${server.name} stays on ${server.plan}`)).toBe(true);
    const row = await t.deps.knex('servers').where({ id: server.id }).first();
    expect(row).toMatchObject({ plan: server.plan, status: 'running' });
  });

  it('a reboot fails in the same words, without the resize suffix', async () => {
    const task = await failed(await owner.post(`/servers/${server.id}/reboot`, {}));
    expect(task.error).not.toContain('stays on');
  });

  it('a scale fails, and the recorded count stays', async () => {
    await failed(await owner.post(`/environments/${w.environment.id}/scale`, { instances: server.instances + 1 }));
    const row = await t.deps.knex('servers').where({ id: server.id }).first();
    expect(row.instances).toBe(server.instances);
  });

  it('a variables apply fails', async () => {
    await failed(await owner.post(`/environments/${w.environment.id}/variables/apply`, {}));
  });
});
