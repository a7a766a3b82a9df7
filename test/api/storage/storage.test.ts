import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { repositoriesDir, useTestContext } from '../../helpers/context';
import { createAppRepo, waitForTask } from '../../helpers/deploy-fixtures';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';

/**
 * Storage rules through the API and a real worker: the allowance the web server's plan includes (small: 10
 * GB), split between the database and files disks, 409 storage_allowance_spent past it, the part beyond
 * the plan a priced subscription, the volume growing (a task) and never shrinking.
 */
const t = useTestContext({ worker: true, edge: false });

let owner: Agent;
let viewer: Agent;
let outsider: Agent;
let teamId: string;
let env: { id: string; name: string };
let project: { id: string; team_id: string };
const base = () => `/environments/${env.id}/storage`;

async function runTask(agent: Agent, p: string, body?: unknown) {
  const res = await agent.post(p, body);
  expect(res.status, res.text).toBe(202);
  return waitForTask(t, agent, res.body.id, { timeoutMs: 60_000 });
}

beforeAll(async () => {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  teamId = team.id;
  const repo = createAppRepo(mkdtempSync(path.join(repositoriesDir(), 'storage-')));
  repo.commit('v1');
  project = await createProject(t, team, { repository_url: repo.dir });
  owner = await sessionAgent(t, user);
  const v = await createUser(t);
  await addMember(t, team, v, 'viewer');
  viewer = await sessionAgent(t, v);
  outsider = await sessionAgent(t, await createUser(t));
  const created = await owner.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
  expect(created.status, created.text).toBe(201);
  env = created.body;
});

describe('GET /environments/{id}/storage/allowance', () => {
  it("starts at what the web server's plan includes, nothing paid, nothing used", async () => {
    const res = await owner.get(`${base()}/allowance`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      allowance_gb: 10,
      included_gb: 10,
      used_bytes: { database: 0, files: 0 },
      monthly_price: 0,
      currency: 'EUR',
      order: null,
    });
    expect((await owner.get(`${base()}/split`)).body).toEqual({ database_gb: 5, files_gb: 5 });
  });

  it('is 404 to a caller outside the team and 403 to change for a viewer', async () => {
    expect((await outsider.get(`${base()}/allowance`)).status).toBe(404);
    const res = await viewer.post(`${base()}/allowance`, { allowance_gb: 20 });
    expect(res.status).toBe(403);
    expect((await owner.get(`${base()}/allowance`)).body.allowance_gb).toBe(10);
  });
});

describe('GET /environments/{id}/storage/{disk}/disk', () => {
  it('shows each disk, the files disk as the volume, both on the first root', async () => {
    const files = await owner.get(`${base()}/files/disk`);
    expect(files.status, files.text).toBe(200);
    expect(files.body).toMatchObject({
      disk: 'files',
      size_gb: 5,
      location: t.config.storageRoots[0],
      old_location: null,
      used_bytes: 0,
    });
    expect(files.body.volume_id).toMatch(/^[0-9a-f-]{36}$/);
    const database = await owner.get(`${base()}/database/disk`);
    expect(database.body).toMatchObject({ disk: 'database', size_gb: 5, volume_id: null });
  });

  it("answers the first reads of a fresh environment's storage all at once (as the console's page asks them)", async () => {
    // The storage is made on first use: requests that come together each find it whole, never half made.
    for (let round = 0; round < 5; round++) {
      const made = await owner.post(`/projects/${project.id}/environments`, {
        name: `fresh-${round}`,
        git_ref: 'main',
      });
      expect(made.status, made.text).toBe(201);
      const fresh = made.body as { id: string };
      const at = `/environments/${fresh.id}/storage`;
      const answers = await Promise.all(
        ['allowance', 'split', 'files/disk', 'database/disk', 'split', 'allowance'].map((p) => owner.get(`${at}/${p}`)),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(answers[1].body.database_gb + answers[1].body.files_gb).toBe(answers[0].body.allowance_gb);
      expect(await t.deps.knex('storage_disks').where({ environment_id: fresh.id })).toHaveLength(2);
    }
  });

  it('an unknown disk is 404, an unknown environment too', async () => {
    const res = await owner.get(`${base()}/cache/disk`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect((await owner.get(`/environments/${crypto.randomUUID()}/storage/files/disk`)).status).toBe(404);
  });
});

describe('POST /environments/{id}/storage/allowance and split', () => {
  it('a larger allowance goes to the files disk and the part beyond the plan is a priced subscription', async () => {
    const res = await owner.post(`${base()}/allowance`, { allowance_gb: 30 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ allowance_gb: 30, included_gb: 10, monthly_price: 2, currency: 'EUR' });
    expect(res.body.order).toMatch(/^ord_/);
    expect((await owner.get(`${base()}/split`)).body).toEqual({ database_gb: 5, files_gb: 25 });
    const billing = await owner.get(`/teams/${teamId}/billing`);
    const storage = billing.body.subscriptions.filter((s: { order: string }) => s.order === res.body.order);
    expect(storage).toEqual([expect.objectContaining({ monthly_price: 2, status: 'active' })]);
  });

  it('a split must sum to the allowance: more is 409 storage_allowance_spent, less 422, and nothing changes', async () => {
    const over = await owner.post(`${base()}/split`, { database_gb: 10, files_gb: 25 });
    expect(over.status).toBe(409);
    expect(over.body.error.code).toBe('storage_allowance_spent');
    const under = await owner.post(`${base()}/split`, { database_gb: 1, files_gb: 25 });
    expect(under.status).toBe(422);
    expect(under.body.error.fields).toHaveProperty('files_gb');
    expect((await owner.get(`${base()}/split`)).body).toEqual({ database_gb: 5, files_gb: 25 });
  });

  it('the volume never shrinks through a split; the database disk may', async () => {
    const shrink = await owner.post(`${base()}/split`, { database_gb: 10, files_gb: 20 });
    expect(shrink.status).toBe(422);
    expect(shrink.body.error.fields.files_gb).toMatch(/never shrinks/);
    const ok = await owner.post(`${base()}/split`, { database_gb: 3, files_gb: 27 });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ database_gb: 3, files_gb: 27 });
  });

  it('a disk size takes the rest of the allowance from the other disk; past what it can give: 409', async () => {
    const spent = await owner.post(`${base()}/database/disk`, { size_gb: 10 });
    expect(spent.status).toBe(409);
    expect(spent.body.error.code).toBe('storage_allowance_spent');
    const files = await owner.post(`${base()}/files/disk`, { size_gb: 28 });
    expect(files.status, files.text).toBe(200);
    expect(files.body).toMatchObject({ disk: 'files', size_gb: 28 });
    expect((await owner.get(`${base()}/split`)).body).toEqual({ database_gb: 2, files_gb: 28 });
    const shrink = await owner.post(`${base()}/files/disk`, { size_gb: 27 });
    expect(shrink.status).toBe(422);
    expect(shrink.body.error.fields).toHaveProperty('size_gb');
  });

  it('a smaller allowance is taken from the database disk; more than it can give is 409', async () => {
    // database 2 GB, files 28 GB: 28 would leave the database nothing
    const spent = await owner.post(`${base()}/allowance`, { allowance_gb: 28 });
    expect(spent.status).toBe(409);
    expect(spent.body.error.code).toBe('storage_allowance_spent');
    expect((await owner.get(`${base()}/allowance`)).body.allowance_gb).toBe(30);
    const ok = await owner.post(`${base()}/allowance`, { allowance_gb: 29 });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ allowance_gb: 29, monthly_price: 1.9 });
    expect((await owner.get(`${base()}/split`)).body).toEqual({ database_gb: 1, files_gb: 28 });
  });

  it('bad sizes are 422 naming the field', async () => {
    const res = await owner.post(`${base()}/split`, { database_gb: 0, files_gb: 'x' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['database_gb', 'files_gb']);
    expect((await owner.post(`${base()}/allowance`, { allowance_gb: 2.5 })).body.error.fields).toHaveProperty(
      'allowance_gb',
    );
  });
});

describe('POST /environments/{id}/storage/{disk}/move and discard (refusals)', () => {
  it('an unknown root is 422 on location, the current root too; a database disk without a service 422 on disk', async () => {
    const unknown = await owner.post(`${base()}/files/move`, { location: '/etc' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.fields).toHaveProperty('location');
    const same = await owner.post(`${base()}/files/move`, { location: t.config.storageRoots[0] });
    expect(same.status).toBe(422);
    expect(same.body.error.fields).toHaveProperty('location');
    const db = await owner.post(`${base()}/database/move`, { location: t.config.storageRoots[0] });
    expect(db.status).toBe(422);
    expect(await t.deps.knex('tasks').where({ environment_id: env.id, type: 'storage_move' })).toEqual([]);
  });

  it('discard without confirm is 422 on confirm; with it, a task that finds nothing to discard', async () => {
    const res = await owner.post(`${base()}/discard`, {});
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toHaveProperty('confirm');
    const task = await runTask(owner, `${base()}/discard`, { confirm: true });
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(task.result).toEqual({ discarded: [] });
  });
});

describe('/volumes/{id}/grow', () => {
  let volumeId: string;

  it('GET shows the size and the sizes it can grow to, each with its monthly price delta', async () => {
    volumeId = (await owner.get(`${base()}/files/disk`)).body.volume_id;
    const res = await owner.get(`/volumes/${volumeId}/grow`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.size_gb).toBe(28);
    expect(res.body.currency).toBe('EUR');
    // every GB past the plan's 10 costs 0.10 EUR a month; the allowance is already past it
    expect(res.body.choices.slice(0, 2)).toEqual([
      { size_gb: 33, monthly_price_delta: 0.5 },
      { size_gb: 38, monthly_price_delta: 1 },
    ]);
    expect((await outsider.get(`/volumes/${volumeId}/grow`)).status).toBe(404);
  });

  it('POST never shrinks (422 on size_gb), and grows the volume and the allowance in a task', async () => {
    for (const size_gb of [28, 5]) {
      const res = await owner.post(`/volumes/${volumeId}/grow`, { size_gb });
      expect(res.status).toBe(422);
      expect(res.body.error.fields).toHaveProperty('size_gb');
    }
    const task = await runTask(owner, `/volumes/${volumeId}/grow`, { size_gb: 40 });
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(task.type).toBe('volume_grow');
    expect((await owner.get(`${base()}/split`)).body).toEqual({ database_gb: 1, files_gb: 40 });
    const allowance = (await owner.get(`${base()}/allowance`)).body;
    expect(allowance).toMatchObject({ allowance_gb: 41, monthly_price: 3.1 });
    const subs = await t.deps
      .knex('subscriptions')
      .where({ environment_id: env.id, kind: 'storage' })
      .orderBy('created_at');
    expect(subs.filter((s: { status: string }) => s.status === 'active')).toHaveLength(1);
    expect(subs.find((s: { status: string }) => s.status === 'active').order).toBe(allowance.order);
  });
});
