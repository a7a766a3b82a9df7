/**
 * CONTRACT "Variables": the whole environment of a process (every scope and the built-ins) is at most
 * 1 MiB. Values of 64 KiB each pass every other check; without this rule the 17th one makes every start
 * of the environment fail with `spawn E2BIG`. A write or import that would pass it, for any environment it
 * reaches, is refused with 422 naming the field, and saves nothing.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { processVariables } from '../../../db/queries/variables';
import { stepEnv } from '../../../activities/toolkit/step-env';

const t = useTestContext();
const KIB64 = 64 * 1024;
const big = (c: string) => c.repeat(KIB64);

async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  const environment = await createEnvironment(t, project, { name: 'production' });
  return { project, environment, agent: await sessionAgent(t, owner) };
}

async function snapshot(projectId: string) {
  return t.deps
    .knex('variables')
    .where({ project_id: projectId })
    .orderBy(['environment_id', 'name'])
    .select('id', 'name', 'value_sealed', 'updated_at');
}

describe('the 1 MiB environment of a process', () => {
  it('refuses the project variable that would pass it (422 on value), saves nothing, and what fits still starts', async () => {
    const { project, environment, agent } = await world();
    let accepted = 0;
    let refused: { status: number; body: { error: { code: string; fields: Record<string, string> } } } | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const res = await agent.post(`/projects/${project.id}/variables`, { name: `BLOB_${i}`, value: big('a') });
      if (res.status === 201) accepted++;
      else refused = res;
    }
    expect(refused?.status).toBe(422);
    expect(refused?.body.error.code).toBe('invalid');
    expect(refused?.body.error.fields.value).toMatch(/environment "production".*1024 KiB/);
    expect(accepted).toBe(15);
    expect(await snapshot(project.id)).toHaveLength(15);
    // Replacing a value with one of the same size still fits; a bigger one does not (and keeps the old one).
    expect((await agent.post(`/projects/${project.id}/variables`, { name: 'BLOB_0', value: big('b') })).status).toBe(
      200,
    );
    const before = await snapshot(project.id);
    const small = await agent.post(`/projects/${project.id}/variables`, { name: 'TINY', value: 'x'.repeat(60_000) });
    expect(small.status).toBe(422);
    expect(await snapshot(project.id)).toEqual(before);

    // Everything the API accepted starts: the environment a web process gets, built-ins and all, execs.
    const { vars } = await processVariables(t.deps.knex, t.deps.secrets, environment.id);
    const env = stepEnv(vars, { PORT: '30000', HOME: '/home/app', VC_VOLUME_PATH: '/srv/volumes/x' });
    const started = spawnSync('/bin/sh', ['-c', 'exit 0'], { env: env as NodeJS.ProcessEnv });
    expect(started.error).toBeUndefined();
    expect(started.status).toBe(0);
  });

  it("counts the project's variables in every environment: an environment's own value, or a project value, that would pass it is refused", async () => {
    const { project, environment, agent } = await world();
    const staging = await createEnvironment(t, project, { name: 'staging' });
    const text = Array.from({ length: 10 }, (_, i) => `SHARED_${i}=${big('p')}`).join('\n');
    expect((await agent.post(`/projects/${project.id}/variables/import`, { text })).status).toBe(200);
    for (let i = 0; i < 5; i++) {
      const res = await agent.post(`/environments/${staging.id}/variables`, { name: `OWN_${i}`, value: big('s') });
      expect(res.status, res.text).toBe(201);
    }
    // staging now holds 15 x 64 KiB: one more of its own does not fit ...
    const own = await agent.post(`/environments/${staging.id}/variables`, { name: 'OWN_5', value: big('s') });
    expect(own.status).toBe(422);
    expect(own.body.error.fields.value).toMatch(/environment "staging"/);
    // ... nor does one more of the project's, though production alone would take it.
    const before = await snapshot(project.id);
    const shared = await agent.post(`/projects/${project.id}/variables`, { name: 'SHARED_10', value: big('p') });
    expect(shared.status).toBe(422);
    expect(shared.body.error.fields.value).toMatch(/environment "staging"/);
    expect(await snapshot(project.id)).toEqual(before);
    // An environment's value that overrides a project one takes its place, not more room.
    const override = await agent.post(`/environments/${environment.id}/variables`, {
      name: 'SHARED_0',
      value: big('o'),
    });
    expect(override.status).toBe(201);
  });

  it('refuses an import that would pass it with 422 on text, all or nothing', async () => {
    const { project, environment, agent } = await world();
    const lines = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i) => `${prefix}_${i}=${big('i')}`).join('\n');
    // A request body holds at most 1 MiB, so the environment is filled in two imports.
    const first = await agent.post(`/environments/${environment.id}/variables/import`, { text: lines('FIRST', 10) });
    expect(first.status).toBe(200);
    const before = await snapshot(project.id);
    const res = await agent.post(`/environments/${environment.id}/variables/import`, {
      text: `SMALL=1\n${lines('SECOND', 7)}`,
    });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.text).toMatch(/environment "production"/);
    expect(await snapshot(project.id)).toEqual(before);
    // The same import into the project is refused for the environment it reaches.
    const again = await agent.post(`/projects/${project.id}/variables/import`, { text: lines('SECOND', 7) });
    expect(again.status).toBe(422);
    expect(Object.keys(again.body.error.fields)).toEqual(['text']);
    expect(await snapshot(project.id)).toEqual(before);
  });
});
