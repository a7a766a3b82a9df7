import { execFileSync } from 'node:child_process';
import { writeFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createAccessToken, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createDeployWorld, createEnvironment } from '../../helpers/deploy-fixtures';
import type { Agent } from '../../helpers/http';
import { ALIAS_BOMB } from '../../helpers/junk';

const t = useTestContext();
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let strangerApi: Agent;

const BAD = ['build: ["npm ci", 42]', 'deploy: "node migrate.js"', 'web: node server.js', 'colour: blue', ''].join(
  '\n',
);

beforeAll(async () => {
  w = await createDeployWorld(t);
  const stranger = await createUser(t);
  strangerApi = t.agent().withBearer(await createAccessToken(t, stranger, await createTeam(t, stranger)));
});

function commitManifest(text: string | null) {
  const file = path.join(w.repo.dir, 'service.yaml');
  if (text === null) unlinkSync(file);
  else writeFileSync(file, text);
  execFileSync('git', ['add', '-A'], { cwd: w.repo.dir });
  execFileSync(
    'git',
    ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'manifest', '--allow-empty'],
    { cwd: w.repo.dir },
  );
  return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: w.repo.dir, encoding: 'utf8' }).trim();
}

describe('POST /validate', () => {
  it('answers 200 with the manifest as it will be read', async () => {
    const res = await w.api.post('/validate', {
      manifest: 'build: ["npm ci"]\nweb: node server.js\nhealth: /healthz\n',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      valid: true,
      manifest: { build: ['npm ci'], deploy: [], web: 'node server.js', health: '/healthz' },
    });
  });

  it('refuses an unknown key and a wrong type with 422, naming each with its line', async () => {
    const res = await w.api.post('/validate', { manifest: BAD });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid');
    expect(res.body.error.fields).toEqual({
      'build.1': expect.stringMatching(/\(line 1\)$/),
      deploy: expect.stringMatching(/array.*\(line 2\)$/),
      colour: 'unknown key (line 4)',
    });
  });

  it('names a YAML syntax error under manifest', async () => {
    const res = await w.api.post('/validate', { manifest: 'build: [unclosed\n' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['manifest']);
    expect(res.body.error.fields.manifest).toMatch(/line \d+/);
  });

  it('refuses a body without manifest, or with other fields, naming them', async () => {
    const res = await w.api.post('/validate', { manifest: 3, extra: true });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['extra', 'manifest']);
    expect(res.body.error.fields.extra).toBe('unknown field');
    const empty = await w.api.post('/validate', {});
    expect(empty.body.error.fields).toEqual({ manifest: 'is required' });
  });

  it('refuses a YAML alias bomb ("billion laughs") with 422 on manifest, without expanding it', async () => {
    const res = await w.api.post('/validate', { manifest: ALIAS_BOMB });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toEqual({ manifest: expect.stringMatching(/aliases/) });
  });

  it('refuses a manifest with a NUL character with 422 on manifest', async () => {
    const res = await w.api.post('/validate', { manifest: 'web: node\u0000 server.js\n' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['manifest']);
  });

  it("is open to a viewer's token and to a signed-in session", async () => {
    expect((await w.viewerApi.post('/validate', { manifest: '' })).status).toBe(200);
    const session = await sessionAgent(t, w.developer);
    expect((await session.post('/validate', { manifest: 'web: x' })).body).toMatchObject({ valid: true });
  });
});

describe('POST /environments/{id}/validate', () => {
  const url = () => `/environments/${w.environment.id}/validate`;

  it('checks the manifest in the body', async () => {
    expect((await w.api.post(url(), { manifest: 'web: node x.js' })).body).toEqual({
      valid: true,
      manifest: { build: [], deploy: [], web: 'node x.js' },
    });
    const bad = await w.api.post(url(), { manifest: BAD });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['build.1', 'colour', 'deploy']);
  });

  it('without a body, reads service.yaml at the head of the git ref', async () => {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: w.repo.dir, encoding: 'utf8' }).trim();
    const res = await w.api.post(url());
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      valid: true,
      source: { git_ref: 'main', commit_sha: head, present: true },
      manifest: { web: 'node server.js', health: '/healthz' },
    });
  });

  it('names the faults of a newly pushed service.yaml with their lines, and says which commit it read', async () => {
    const sha = commitManifest(BAD);
    const res = await w.api.post(url(), {});
    expect(res.status).toBe(422);
    expect(res.body.error.fields.colour).toBe('unknown key (line 4)');
    expect(res.body.error.source).toEqual({ git_ref: 'main', commit_sha: sha, present: true });
  });

  it('refuses an alias bomb, in the body or pushed as service.yaml, with 422 on manifest', async () => {
    const inBody = await w.api.post(url(), { manifest: ALIAS_BOMB });
    expect(inBody.status).toBe(422);
    expect(inBody.body.error.fields.manifest).toMatch(/aliases/);
    commitManifest(ALIAS_BOMB);
    const pushed = await w.api.post(url());
    expect(pushed.status).toBe(422);
    expect(pushed.body.error.fields.manifest).toMatch(/aliases/);
    commitManifest('web: node server.js\n');
  });

  it('takes a commit without service.yaml as an empty, valid manifest', async () => {
    const sha = commitManifest(null);
    const res = await w.api.post(url());
    expect(res.body).toEqual({
      valid: true,
      manifest: { build: [], deploy: [] },
      source: { git_ref: 'main', commit_sha: sha, present: false },
    });
  });

  it('answers 409 no_repository without a repository and no body', async () => {
    const env = await createEnvironment(t, await createProject(t, w.team));
    const res = await w.api.post(`/environments/${env.id}/validate`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('no_repository');
    expect((await w.api.post(`/environments/${env.id}/validate`, { manifest: '' })).status).toBe(200);
  });

  it("answers 404 for another team's environment", async () => {
    expect((await strangerApi.post(url(), { manifest: '' })).status).toBe(404);
  });
});
