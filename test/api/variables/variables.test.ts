import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import {
  addMember,
  createAccessToken,
  createProject,
  createTeam,
  createUser,
  sessionAgent,
} from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { openVariable } from '../../../db/queries/variables';
import {
  variableListSchema,
  effectiveVariableListSchema,
  importResultSchema,
  parsedSchema,
} from '../../../api/variables/schemas';

const t = useTestContext();

async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  const environment = await createEnvironment(t, project, { name: 'production' });
  return { owner, team, project, environment, agent: await sessionAgent(t, owner) };
}

async function rows(projectId: string) {
  return t.deps.knex('variables').where({ project_id: projectId }).orderBy(['environment_id', 'name']);
}

describe('POST /projects/{id}/variables', () => {
  it('creates (201), then replaces (200), and keeps the value encrypted at rest', async () => {
    const { project, agent } = await world();
    const a = await agent.post(`/projects/${project.id}/variables`, {
      name: 'API_URL',
      value: 'https://api.example.test',
    });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ name: 'API_URL', value: 'https://api.example.test', secret: false });
    const b = await agent.post(`/projects/${project.id}/variables`, {
      name: 'API_URL',
      value: 'https://v2.example.test',
    });
    expect(b.status).toBe(200);
    expect(b.body.value).toBe('https://v2.example.test');
    const [row] = await rows(project.id);
    expect(row.value_sealed).not.toContain('example');
    expect(row.value_sealed).toMatch(/^v1\./);
    expect(openVariable(t.deps.secrets, row)).toBe('https://v2.example.test');
  });

  it('shows a secret as null in every answer, also after a replace without the flag', async () => {
    const { project, agent } = await world();
    const created = await agent.post(`/projects/${project.id}/variables`, {
      name: 'STRIPE_KEY',
      value: 'sk_live_abc',
      secret: true,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ value: null, secret: true });
    const replaced = await agent.post(`/projects/${project.id}/variables`, {
      name: 'STRIPE_KEY',
      value: 'sk_live_def',
    });
    expect(replaced.body).toMatchObject({ value: null, secret: true });
    const list = await agent.get(`/projects/${project.id}/variables`);
    expect(variableListSchema.parse(list.body).data).toEqual([
      expect.objectContaining({ name: 'STRIPE_KEY', value: null, secret: true }),
    ]);
    expect(list.text).not.toContain('sk_live');
  });

  it('refuses bad names, reserved names and values over 64 KiB with 422 naming the field', async () => {
    const { project, agent } = await world();
    for (const name of ['1ABC', 'A-B', 'PORT', 'VC_TOKEN', 'X'.repeat(129), '']) {
      const res = await agent.post(`/projects/${project.id}/variables`, { name, value: 'x' });
      expect(res.status, name).toBe(422);
      expect(res.body.error.fields.name, name).toBeTruthy();
    }
    const big = await agent.post(`/projects/${project.id}/variables`, {
      name: 'BIG',
      value: 'x'.repeat(64 * 1024 + 1),
    });
    expect(big.status).toBe(422);
    expect(big.body.error.fields.value).toMatch(/64 KiB/);
    expect(
      await agent.post(`/projects/${project.id}/variables`, { name: 'EXACT', value: 'x'.repeat(64 * 1024) }),
    ).toMatchObject({ status: 201 });
    expect((await rows(project.id)).map((r) => r.name)).toEqual(['EXACT']);
  });

  it('refuses the 501st variable of a scope', async () => {
    const { project, agent } = await world();
    const text = Array.from({ length: 500 }, (_, i) => `V${i}=${i}`).join('\n');
    expect((await agent.post(`/projects/${project.id}/variables/import`, { text })).status).toBe(200);
    const res = await agent.post(`/projects/${project.id}/variables`, { name: 'ONE_MORE', value: 'x' });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.name).toMatch(/500/);
    expect(await rows(project.id)).toHaveLength(500);
  });

  it('is for admins and owners to change; every member reads (secrets stay null); a token is refused', async () => {
    const { team, project, agent } = await world();
    await agent.post(`/projects/${project.id}/variables`, { name: 'A', value: '1' });
    const dev = await createUser(t);
    await addMember(t, team, dev, 'developer');
    const devAgent = await sessionAgent(t, dev);
    expect((await devAgent.get(`/projects/${project.id}/variables`)).status).toBe(200);
    expect((await devAgent.post(`/projects/${project.id}/variables`, { name: 'B', value: '2' })).status).toBe(403);
    const viewer = await createUser(t);
    await addMember(t, team, viewer, 'viewer');
    expect((await (await sessionAgent(t, viewer)).get(`/projects/${project.id}/variables`)).status).toBe(200);
    const token = t.agent().withBearer(await createAccessToken(t, dev, team));
    expect((await token.get(`/projects/${project.id}/variables`)).body.error.code).toBe('token_not_allowed');
    const stranger = await sessionAgent(t, await createUser(t));
    expect((await stranger.get(`/projects/${project.id}/variables`)).status).toBe(404);
  });
});

describe('DELETE /projects/{id}/variables/{name}', () => {
  it('removes the variable (204), then 404', async () => {
    const { project, agent } = await world();
    await agent.post(`/projects/${project.id}/variables`, { name: 'GONE', value: '1' });
    expect((await agent.delete(`/projects/${project.id}/variables/GONE`)).status).toBe(204);
    expect((await agent.delete(`/projects/${project.id}/variables/GONE`)).status).toBe(404);
  });
});

describe('GET /environments/{id}/variables', () => {
  it("lists the effective set: the environment's value overrides the project's, each with its source", async () => {
    const { project, environment, agent } = await world();
    await agent.post(`/projects/${project.id}/variables`, { name: 'SHARED', value: 'p' });
    await agent.post(`/projects/${project.id}/variables`, { name: 'LEVEL', value: 'project' });
    expect(
      (await agent.post(`/environments/${environment.id}/variables`, { name: 'LEVEL', value: 'env' })).status,
    ).toBe(201);
    await agent.post(`/environments/${environment.id}/variables`, { name: 'ONLY_ENV', value: 'e', secret: true });
    const res = await agent.get(`/environments/${environment.id}/variables`);
    expect(res.status).toBe(200);
    expect(
      effectiveVariableListSchema
        .parse(res.body)
        .data.map(({ name, value, source, secret }) => ({ name, value, source, secret })),
    ).toEqual([
      { name: 'LEVEL', value: 'env', source: 'environment', secret: false },
      { name: 'ONLY_ENV', value: null, source: 'environment', secret: true },
      { name: 'SHARED', value: 'p', source: 'project', secret: false },
    ]);
    expect((await agent.get(`/environments/${environment.id}/variables/SHARED`)).body).toMatchObject({
      value: 'p',
      source: 'project',
    });
    expect((await agent.get(`/environments/${environment.id}/variables/NOPE`)).status).toBe(404);
  });

  it("DELETE removes the environment's own value only: the project's applies again; 404 when it has none", async () => {
    const { project, environment, agent } = await world();
    await agent.post(`/projects/${project.id}/variables`, { name: 'LEVEL', value: 'project' });
    await agent.post(`/environments/${environment.id}/variables`, { name: 'LEVEL', value: 'env' });
    expect((await agent.delete(`/environments/${environment.id}/variables/LEVEL`)).status).toBe(204);
    expect((await agent.get(`/environments/${environment.id}/variables/LEVEL`)).body).toMatchObject({
      value: 'project',
      source: 'project',
    });
    expect((await agent.delete(`/environments/${environment.id}/variables/LEVEL`)).status).toBe(404);
  });
});

const PASTED = [
  '# database',
  'export DB_HOST=db.internal',
  '',
  "LITERAL='a $b \\n c'",
  'QUOTED="line one\\nline \\"two\\"',
  'still quoted \\\\ here"',
  'PLAIN=value # a comment',
  'HASHED=abc#def',
  'EMPTY=',
].join('\n');

describe('POST /variables/parse', () => {
  it('reads the pasted text with lines, saving nothing', async () => {
    const { agent } = await world();
    const res = await agent.post('/variables/parse', { text: PASTED });
    expect(res.status).toBe(200);
    expect(parsedSchema.parse(res.body).data).toEqual([
      { name: 'DB_HOST', value: 'db.internal', line: 2 },
      { name: 'LITERAL', value: 'a $b \\n c', line: 4 },
      { name: 'QUOTED', value: 'line one\nline "two"\nstill quoted \\ here', line: 5 },
      { name: 'PLAIN', value: 'value', line: 7 },
      { name: 'HASHED', value: 'abc#def', line: 8 },
      { name: 'EMPTY', value: '', line: 9 },
    ]);
  });

  it('refuses a malformed line or a repeated name with 422 on text naming the line', async () => {
    const { agent } = await world();
    const cases: Array<[string, RegExp]> = [
      ['A=1\nnot a line\n', /^line 2: /],
      ['A=1\n\nA=2', /^line 3: A is given twice \(first on line 1\)/],
      ['A=1\nB="open\nC=3', /^line 2: /],
      ["X='unclosed", /^line 1: /],
      ['PORT=80', /^line 1: PORT is reserved/],
      ['A="x" trailing', /^line 1: /],
    ];
    for (const [text, reason] of cases) {
      const res = await agent.post('/variables/parse', { text });
      expect(res.status, text).toBe(422);
      expect(res.body.error.fields.text, text).toMatch(reason);
    }
  });
});

describe('POST /projects/{id}/variables/import', () => {
  it('creates new names, skips existing ones unless overwrite, and tells unchanged from updated', async () => {
    const { project, agent } = await world();
    await agent.post(`/projects/${project.id}/variables`, { name: 'KEEP', value: 'old' });
    await agent.post(`/projects/${project.id}/variables`, { name: 'SAME', value: 'same' });
    const first = await agent.post(`/projects/${project.id}/variables/import`, { text: 'KEEP=new\nSAME=same\nNEW=1' });
    expect(first.status).toBe(200);
    expect(importResultSchema.parse(first.body)).toEqual({
      created: ['NEW'],
      updated: [],
      unchanged: [],
      skipped: ['KEEP', 'SAME'],
    });
    const second = await agent.post(`/projects/${project.id}/variables/import`, {
      text: 'KEEP=new\nSAME=same\nTOKEN=t0k',
      overwrite: true,
      secret: false,
    });
    expect(second.body).toEqual({ created: ['TOKEN'], updated: ['KEEP'], unchanged: ['SAME'], skipped: [] });
    const secret = await agent.post(`/environments/${(await createEnvironment(t, project)).id}/variables/import`, {
      text: 'PW=hunter2',
      secret: true,
    });
    expect(secret.body.created).toEqual(['PW']);
    const list = await agent.get(`/projects/${project.id}/variables`);
    expect(Object.fromEntries(list.body.data.map((v: { name: string; value: string }) => [v.name, v.value]))).toEqual({
      KEEP: 'new',
      NEW: '1',
      SAME: 'same',
      TOKEN: 't0k',
    });
  });

  it('saves nothing when any line is at fault', async () => {
    const { project, agent } = await world();
    await agent.post(`/projects/${project.id}/variables`, { name: 'KEEP', value: 'old' });
    const before = await rows(project.id);
    const res = await agent.post(`/projects/${project.id}/variables/import`, {
      text: 'KEEP=new\nFRESH=1\n9BAD=x',
      overwrite: true,
    });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.text).toMatch(/^line 3: /);
    expect(await rows(project.id)).toEqual(before);
  });

  it('takes `secret` as a list of the names to store as secret (the others not); a bad list is 422 on secret', async () => {
    const { project, agent } = await world();
    await agent.post(`/projects/${project.id}/variables`, { name: 'OLD_TOKEN', value: 'a', secret: true });
    const before = await rows(project.id);
    for (const secret of [['NOT_THERE'], ['9BAD'], 'yes', [1]]) {
      const res = await agent.post(`/projects/${project.id}/variables/import`, {
        text: 'API_SECRET=s3cret\nPUBLIC_URL=https://x.test\nOLD_TOKEN=b',
        secret,
        overwrite: true,
      });
      expect(res.status, JSON.stringify(secret)).toBe(422);
      expect(Object.keys(res.body.error.fields).join(), JSON.stringify(secret)).toMatch(/^secret/);
      expect(await rows(project.id)).toEqual(before);
    }
    const res = await agent.post(`/projects/${project.id}/variables/import`, {
      text: 'API_SECRET=s3cret\nPUBLIC_URL=https://x.test\nOLD_TOKEN=b',
      secret: ['API_SECRET'],
      overwrite: true,
    });
    expect(res.status).toBe(200);
    expect(importResultSchema.parse(res.body)).toEqual({
      created: ['API_SECRET', 'PUBLIC_URL'],
      updated: ['OLD_TOKEN'],
      unchanged: [],
      skipped: [],
    });
    const list = variableListSchema.parse((await agent.get(`/projects/${project.id}/variables`)).body).data;
    expect(list.map((v) => [v.name, v.secret, v.value])).toEqual([
      ['API_SECRET', true, null],
      ['OLD_TOKEN', false, 'b'],
      ['PUBLIC_URL', false, 'https://x.test'],
    ]);
    expect(JSON.stringify(res.body)).not.toContain('s3cret');
  });
});
