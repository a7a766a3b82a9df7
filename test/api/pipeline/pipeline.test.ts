import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createAccessToken, createProject, createTeam, createUser } from '../../helpers/fixtures';
import { createDeployWorld, createEnvironment } from '../../helpers/deploy-fixtures';
import type { Agent } from '../../helpers/http';

const t = useTestContext();
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let head: string;
let strangerApi: Agent;
const releases: Array<{ id: string; git_ref: string; commit_sha: string; environment_id: string }> = [];

async function insertRelease(
  environment: { id: string; team_id: string; project_id: string },
  attrs: { git_ref: string; commit_sha: string; status?: string; minutesAgo: number },
) {
  const row = {
    id: randomUUID(),
    team_id: environment.team_id,
    project_id: environment.project_id,
    environment_id: environment.id,
    git_ref: attrs.git_ref,
    commit_sha: attrs.commit_sha,
    status: attrs.status ?? 'ready',
    built_at: attrs.status === 'building' ? null : new Date(Date.now() - attrs.minutesAgo * 60_000 + 30_000),
    created_at: new Date(Date.now() - attrs.minutesAgo * 60_000),
  };
  await t.deps.knex('releases').insert(row);
  releases.push(row);
  return row;
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  head = w.repo.commit('v2');
  const stranger = await createUser(t);
  const otherTeam = await createTeam(t, stranger);
  strangerApi = t.agent().withBearer(await createAccessToken(t, stranger, otherTeam));
});

describe('GET /projects/{id}/releases', () => {
  let staging: Awaited<ReturnType<typeof createEnvironment>>;
  beforeAll(async () => {
    staging = await createEnvironment(t, w.project, { name: 'staging', git_ref: 'feature' });
    await insertRelease(w.environment, { git_ref: 'main', commit_sha: 'a'.repeat(40), minutesAgo: 50 });
    const live = await insertRelease(w.environment, { git_ref: 'main', commit_sha: 'b'.repeat(40), minutesAgo: 40 });
    await insertRelease(staging, { git_ref: 'feature', commit_sha: 'c'.repeat(40), minutesAgo: 30 });
    await insertRelease(w.environment, { git_ref: 'main', commit_sha: head, status: 'building', minutesAgo: 1 });
    await t.deps.knex('environments').where({ id: w.environment.id }).update({ live_release_id: live.id });
  });

  it('answers the releases newest first, marking the live one', async () => {
    const res = await w.api.get(`/projects/${w.project.id}/releases`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((r: { id: string }) => r.id)).toEqual([...releases].reverse().map((r) => r.id));
    expect(res.body.data.map((r: { live: boolean }) => r.live)).toEqual([false, false, true, false]);
    expect(res.body.data[0]).toEqual({
      id: releases[3].id,
      environment_id: w.environment.id,
      git_ref: 'main',
      commit_sha: head,
      commit_message: null,
      status: 'building',
      built_at: null,
      created_at: expect.any(String),
      live: false,
    });
    expect(res.body.next_before).toBeNull();
  });

  it('narrows to one branch with branch', async () => {
    const res = await w.api.get(`/projects/${w.project.id}/releases?branch=feature`);
    expect(res.body.data.map((r: { commit_sha: string }) => r.commit_sha)).toEqual(['c'.repeat(40)]);
    expect((await w.api.get(`/projects/${w.project.id}/releases?branch=nothing-here`)).body.data).toEqual([]);
  });

  it('pages with limit and next_before', async () => {
    const first = await w.api.get(`/projects/${w.project.id}/releases?limit=3`);
    expect(first.body.data).toHaveLength(3);
    const second = await w.api.get(`/projects/${w.project.id}/releases?limit=3&before=${first.body.next_before}`);
    expect(second.body).toEqual({ data: [expect.objectContaining({ id: releases[0].id })], next_before: null });
  });

  it('refuses a bad branch, limit and cursor, naming each', async () => {
    const res = await w.api.get(`/projects/${w.project.id}/releases?branch=a..b&limit=0&before=zzz`);
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['before', 'branch', 'limit']);
  });

  it("answers 404 for another team's project, and lets a viewer's token read", async () => {
    expect((await strangerApi.get(`/projects/${w.project.id}/releases`)).status).toBe(404);
    expect((await w.viewerApi.get(`/projects/${w.project.id}/releases`)).status).toBe(200);
  });
});

describe('GET /environments/{id}/deploy', () => {
  it('allows a deploy of the head commit of the git ref, saying what is live and what a rollback restores', async () => {
    const res = await w.api.get(`/environments/${w.environment.id}/deploy`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      allowed: true,
      git_ref: 'main',
      head_commit: head,
      head_built: false,
      skip_steps_allowed: true,
    });
    expect(res.body.live_release).toMatchObject({ commit_sha: 'b'.repeat(40) });
  });

  it('says when the head commit is already built (the deploy skips the build)', async () => {
    const env = await createEnvironment(t, w.project, { name: 'built' });
    await insertRelease(env, { git_ref: 'main', commit_sha: head, minutesAgo: 2 });
    const res = await w.api.get(`/environments/${env.id}/deploy`);
    expect(res.body).toMatchObject({
      allowed: true,
      head_commit: head,
      head_built: true,
      live_release: null,
      rollback_release: null,
    });
  });

  it('is blocked with deploy_in_progress and the task id while a deploy runs', async () => {
    const env = await createEnvironment(t, w.project, { name: 'busy' });
    const taskId = randomUUID();
    await t.deps.knex('tasks').insert({
      id: taskId,
      team_id: env.team_id,
      project_id: env.project_id,
      environment_id: env.id,
      kind: 'deployments',
      type: 'deploy',
      status: 'running',
      account_via: 'token',
      workflow_id: `env-change-${env.id}`,
    });
    const res = await w.api.get(`/environments/${env.id}/deploy`);
    expect(res.body).toEqual({
      allowed: false,
      reason: 'deploy_in_progress',
      task_id: taskId,
      git_ref: 'main',
      message: expect.any(String),
    });
  });

  it("is blocked with forbidden for a viewer's token", async () => {
    const res = await w.viewerApi.get(`/environments/${w.environment.id}/deploy`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ allowed: false, reason: 'forbidden' });
  });

  it('is blocked with no_repository, ref_not_found or repository_unreachable', async () => {
    const team = w.team;
    const bare = await createProject(t, team);
    const noRepo = await createEnvironment(t, bare);
    expect((await w.api.get(`/environments/${noRepo.id}/deploy`)).body).toMatchObject({
      allowed: false,
      reason: 'no_repository',
    });
    const missingRef = await createEnvironment(t, w.project, { name: 'nowhere', git_ref: 'no-such-branch' });
    expect((await w.api.get(`/environments/${missingRef.id}/deploy`)).body).toMatchObject({
      allowed: false,
      reason: 'ref_not_found',
    });
    const gone = await createProject(t, team, { repository_url: `${w.root}/does-not-exist` });
    const goneEnv = await createEnvironment(t, gone);
    expect((await w.api.get(`/environments/${goneEnv.id}/deploy`)).body).toMatchObject({
      allowed: false,
      reason: 'repository_unreachable',
    });
  });

  it("answers 404 for another team's environment", async () => {
    expect((await strangerApi.get(`/environments/${w.environment.id}/deploy`)).status).toBe(404);
  });
});

describe('GET /environments/{id}/source', () => {
  it('answers the repository, the git ref and the commit it names now', async () => {
    const res = await w.api.get(`/environments/${w.environment.id}/source`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ repository: { url: w.repo.dir }, git_ref: 'main', head_commit: head });
  });

  it('shows the URL without its password (as GET /projects does), and head_commit null with an error when the repository cannot be read', async () => {
    const project = await createProject(t, w.team, {
      repository_url: 'https://ci-bot:s3cr3t-pass@127.0.0.1:1/app.git',
    });
    const env = await createEnvironment(t, project);
    const res = await w.api.get(`/environments/${env.id}/source`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      repository: { url: 'https://ci-bot@127.0.0.1:1/app.git' },
      git_ref: 'main',
      head_commit: null,
      error: { code: 'repository_unreachable' },
    });
    expect(res.text).not.toContain('s3cr3t');
  });

  it('answers repository null when the project has none', async () => {
    const env = await createEnvironment(t, await createProject(t, w.team));
    expect((await w.viewerApi.get(`/environments/${env.id}/source`)).body).toEqual({
      repository: null,
      git_ref: 'main',
      head_commit: null,
    });
  });

  it("answers 404 for another team's environment", async () => {
    expect((await strangerApi.get(`/environments/${w.environment.id}/source`)).status).toBe(404);
  });
});
