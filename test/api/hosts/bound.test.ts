/**
 * What else is bound to a host (issue 26 item 9, docs/hosts.md) through the API: an environment placed on another
 * host (a host row whose heartbeat the test keeps fresh, with its own STORAGE_ROOTS) moves its volume only among
 * that host's roots, and takes no backup to, nor restore from, a `local` destination (the control plane's machine).
 * The file's own host stands for the control plane's: an environment placed there keeps today's behaviour.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext } from '../../helpers/context';
import { createProject, createTeam, createUser, sessionAgent, insertHost } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { commitAll } from '../../helpers/deploy-fixtures';

const t = useTestContext();
const scratch = mkdtempSync(join(repositoriesDir(), 'vc-bound-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const repository = join(scratch, 'repo');
execFileSync('git', ['init', '-q', '-b', 'main', repository]);
commitAll(repository, 'a');

/** The other host's STORAGE_ROOTS, as its agent would publish them. */
const awayRoots = [join(scratch, 'away-first'), join(scratch, 'away-second')];

/** The other host heartbeats now, as its agent would. */
const beat = () => t.deps.knex('hosts').where({ name: 'b-away' }).update({ heartbeat_at: t.deps.knex.fn.now() });

let agent: Agent;
let teamId: string;
let home: { id: string; name: string };
let away: { id: string; name: string };
let destination: { id: string; name: string };

const hostOf = async (environmentId: string) =>
  (await t.deps.knex('servers').where({ environment_id: environmentId, role: 'web' }).first('host')).host as string;
const tasksOf = async (environmentId: string) =>
  Number((await t.deps.knex('tasks').where({ environment_id: environmentId }).count({ n: '*' }))[0].n);

/** An available snapshot of the environment in the destination (its bytes are never read: the refusal comes first). */
async function snapshot(environmentId: string) {
  const env = await t.deps.knex('environments').where({ id: environmentId }).first('team_id', 'project_id');
  const [row] = await t.deps
    .knex('backups')
    .insert({
      team_id: env.team_id,
      project_id: env.project_id,
      environment_id: environmentId,
      destination_id: destination.id,
      status: 'available',
      trigger: 'manual',
      contents: JSON.stringify(['files']),
      object_key: `test/${environmentId}.tar.enc`,
      key_fingerprint: 'test',
      finished_at: t.deps.knex.fn.now(),
    })
    .returning('id');
  return row.id as string;
}

beforeAll(async () => {
  for (const r of awayRoots) mkdirSync(r);
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  teamId = team.id;
  const projectId = (await createProject(t, team, { repository_url: repository })).id;
  agent = await sessionAgent(t, owner);
  // the first environment on the file's own host (the control plane's), then that host closed to placement and
  // another one registered: the second environment goes there
  const first = await agent.post(`/projects/${projectId}/environments`, { name: 'home', git_ref: 'main' });
  expect(first.status, first.text).toBe(201);
  home = first.body;
  await t.deps.knex('hosts').where({ name: t.config.hostName }).update({ status: 'drained' });
  await insertHost(t, 'b-away', { status: 'ready', storageRoots: awayRoots });
  const second = await agent.post(`/projects/${projectId}/environments`, { name: 'away', git_ref: 'main' });
  expect(second.status, second.text).toBe(201);
  away = second.body;
  expect(await hostOf(home.id)).toBe(t.config.hostName);
  expect(await hostOf(away.id)).toBe('b-away');
  // a local destination, as the operator allows them (BACKUP_LOCAL_ROOTS)
  t.deps.config.backupLocalRoots = [scratch];
  const dir = join(scratch, 'destination');
  mkdirSync(dir);
  const made = await agent.post(`/teams/${teamId}/backup-destinations`, { kind: 'local', name: 'nas', path: dir });
  expect(made.status, made.text).toBe(201);
  destination = made.body;
});
beforeEach(beat);

describe('a storage location is a root of the environment own host', () => {
  it("lists the host's roots as where the volume may go, and makes the volume on its first", async () => {
    const files = await agent.get(`/environments/${away.id}/storage/files/disk`);
    expect(files.status, files.text).toBe(200);
    expect(files.body).toMatchObject({ location: awayRoots[0], roots: awayRoots, old_location: null });
    // the database disk is a tablespace of the services server: the control plane's roots
    const database = await agent.get(`/environments/${away.id}/storage/database/disk`);
    expect(database.body.roots).toEqual(t.config.storageRoots);
    // on the control plane's host, its own roots as before
    const homeFiles = await agent.get(`/environments/${home.id}/storage/files/disk`);
    expect(homeFiles.body).toMatchObject({ location: t.config.storageRoots[0], roots: t.config.storageRoots });
  });

  it('refuses a root of another host with 422 on location, and changes nothing', async () => {
    const before = await tasksOf(away.id);
    const res = await agent.post(`/environments/${away.id}/storage/files/move`, { location: t.config.storageRoots[0] });
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.fields.location).toMatch(
      /not a root of STORAGE_ROOTS on the machine this environment runs on/,
    );
    expect(res.body.error.fields.location).toContain(awayRoots[1]);
    expect(await tasksOf(away.id)).toBe(before);
    const files = await agent.get(`/environments/${away.id}/storage/files/disk`);
    expect(files.body).toMatchObject({ location: awayRoots[0], old_location: null });
    // and the control plane's environment may not go to the other host's roots either
    const homeRes = await agent.post(`/environments/${home.id}/storage/files/move`, { location: awayRoots[1] });
    expect(homeRes.status, homeRes.text).toBe(422);
    expect(homeRes.body.error.fields).toHaveProperty('location');
  });

  it("takes a move to another root of the environment's host (a task)", async () => {
    const res = await agent.post(`/environments/${away.id}/storage/files/move`, { location: `${awayRoots[1]}/` });
    expect(res.status, res.text).toBe(202);
    const task = await t.deps.knex('tasks').where({ id: res.body.id }).first('type', 'params');
    expect(task).toMatchObject({
      type: 'storage_move',
      params: { disk: 'files', from: awayRoots[0], to: awayRoots[1] },
    });
  });
});

describe('local backup destinations are on the control plane machine', () => {
  it('refuses a backup of an environment on another host to a local destination with 409, naming it', async () => {
    const before = await tasksOf(away.id);
    const res = await agent.post(`/environments/${away.id}/backups`, { destination_id: destination.id });
    expect(res.status, res.text).toBe(409);
    expect(res.body.error.code).toBe('local_destination_elsewhere');
    expect(res.body.error.message).toContain('"nas"');
    expect(res.body.error.message).toContain(destination.id);
    expect(res.body.error.message).not.toContain('b-away');
    expect(await tasksOf(away.id)).toBe(before);
    expect(await t.deps.knex('backups').where({ environment_id: away.id })).toEqual([]);
  });

  it("refuses the backup window's local destination the same way", async () => {
    const project = await t.deps.knex('environments').where({ id: away.id }).first('project_id');
    const window = await agent.post(`/projects/${project.project_id}/backup-window`, {
      hour_utc: 3,
      retention_days: 7,
      destination_id: destination.id,
    });
    expect(window.status, window.text).toBe(200);
    const res = await agent.post(`/environments/${away.id}/backups`, {});
    expect(res.status, res.text).toBe(409);
    expect(res.body.error.code).toBe('local_destination_elsewhere');
  });

  it('refuses a restore from a snapshot in a local destination into an environment on another host', async () => {
    const id = await snapshot(away.id);
    const before = await tasksOf(away.id);
    const res = await agent.post(`/environments/${away.id}/backups/${id}/restore`, {});
    expect(res.status, res.text).toBe(409);
    expect(res.body.error.code).toBe('local_destination_elsewhere');
    expect(res.body.error.message).toContain(`snapshot ${id}`);
    expect(res.body.error.message).toContain('"nas"');
    expect(await tasksOf(away.id)).toBe(before);
  });

  it("takes both for an environment on the control plane's host", async () => {
    const backup = await agent.post(`/environments/${home.id}/backups`, { destination_id: destination.id });
    expect(backup.status, backup.text).toBe(202);
    const restore = await agent.post(`/environments/${home.id}/backups/${await snapshot(home.id)}/restore`, {});
    expect(restore.status, restore.text).toBe(202);
  });
});
