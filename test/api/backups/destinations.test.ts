import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext, type TestContext } from '../../helpers/context';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { startS3 } from '../../helpers/s3';
import type { Agent } from '../../helpers/http';
import { ensureBackupKey } from '../../../core/backups/keys';
import { openStore } from '../../../host/destinations';
import { takeSnapshot } from '../../../activities/data/backup-engine';
import { volumeTar } from '../../../host/provider/volume';
import { keyFingerprint } from '../../../host/snapshot-format';

const root = mkdtempSync(join(tmpdir(), 'vc-dest-'));
const t: TestContext = useTestContext({ env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1', BACKUP_LOCAL_ROOTS: root } });
let s3: Awaited<ReturnType<typeof startS3>>;
let owner: Agent;
let viewer: Agent;
let teamId: string;
let project: { id: string; team_id: string };
let envId: string;

beforeAll(async () => {
  s3 = await startS3();
  const user = await createUser(t);
  const team = await createTeam(t, user);
  teamId = team.id;
  owner = await sessionAgent(t, user);
  const v = await createUser(t);
  await addMember(t, team, v, 'viewer');
  viewer = await sessionAgent(t, v);
  project = await createProject(t, team);
  envId = (await createEnvironment(t, project, { name: 'staging' })).id;
});
afterAll(async () => {
  await s3?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** The first port of the ranges starting at `starts` (100 ports each) on which a connection is refused. */
async function refusingPort(starts: number[]): Promise<number> {
  for (const from of starts)
    for (let port = from; port < from + 100; port++) {
      const refused = await new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(false);
        });
        s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
      });
      if (refused) return port;
    }
  throw new Error('no refusing port');
}

const s3Body = (extra: Record<string, unknown> = {}) => ({
  kind: 's3',
  name: `s3-${Math.random().toString(36).slice(2, 8)}`,
  endpoint: s3.endpoint,
  region: 'us-east-1',
  bucket: 'backups',
  prefix: 'vc',
  access_key_id: s3.accessKeyId,
  secret_access_key: s3.secretAccessKey,
  ...extra,
});

describe('GET /teams/{id}/backup-destinations/new', () => {
  it('lists the local and s3 kinds with their fields, secret ones marked', async () => {
    const res = await owner.get(`/teams/${teamId}/backup-destinations/new`);
    expect(res.status).toBe(200);
    const s3Kind = res.body.kinds.find((k: { kind: string }) => k.kind === 's3');
    expect(s3Kind.fields.filter((f: { secret: boolean }) => f.secret).map((f: { name: string }) => f.name)).toEqual([
      'access_key_id',
      'secret_access_key',
    ]);
    expect(res.body.kinds.map((k: { kind: string }) => k.kind)).toEqual(['local', 's3']);
  });

  it('does not offer local while BACKUP_LOCAL_ROOTS is unset, and refuses one with 422 on kind', async () => {
    const saved = t.deps.config.backupLocalRoots;
    t.deps.config.backupLocalRoots = [];
    try {
      const res = await owner.get(`/teams/${teamId}/backup-destinations/new`);
      expect(res.body.kinds.map((k: { kind: string }) => k.kind)).toEqual(['s3']);
      mkdirSync(join(root, 'unset'));
      const refused = await owner.post(`/teams/${teamId}/backup-destinations`, {
        kind: 'local',
        name: 'unset',
        path: join(root, 'unset'),
      });
      expect(refused.status).toBe(422);
      expect(Object.keys(refused.body.error.fields)).toEqual(['kind']);
      expect(refused.body.error.fields.kind).toMatch(/BACKUP_LOCAL_ROOTS/);
      expect(await t.deps.knex('backup_destinations').where({ name: 'unset' })).toEqual([]);
    } finally {
      t.deps.config.backupLocalRoots = saved;
    }
  });
});

describe('POST /teams/{id}/backup-destinations', () => {
  it('adds an S3 destination after a probe, and never shows its secrets', async () => {
    const res = await owner.post(`/teams/${teamId}/backup-destinations`, s3Body());
    expect(res.status, res.text).toBe(201);
    expect(res.text).not.toContain(s3.secretAccessKey);
    expect(res.body).toMatchObject({
      kind: 's3',
      settings: { bucket: 'backups', prefix: 'vc' },
      secret_fields: ['access_key_id', 'secret_access_key'],
      snapshots: 0,
      used_bytes: 0,
    });
    const row = await t.deps.knex('backup_destinations').where({ id: res.body.id }).first();
    expect(JSON.stringify(row)).not.toContain(s3.secretAccessKey);
    const again = await owner.get(`/backup-destinations/${res.body.id}`);
    expect(again.status).toBe(200);
    expect(again.text).not.toContain(s3.secretAccessKey);
  });

  it('refuses a bucket the store does not have with 422 on bucket, and adds nothing', async () => {
    const before = await t.deps.knex('backup_destinations').count({ n: '*' }).first();
    const res = await owner.post(`/teams/${teamId}/backup-destinations`, s3Body({ bucket: 'nope' }));
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['bucket']);
    expect(await t.deps.knex('backup_destinations').count({ n: '*' }).first()).toEqual(before);
  });

  it('refuses an unreachable endpoint with 422 on endpoint', async () => {
    const res = await owner.post(`/teams/${teamId}/backup-destinations`, s3Body({ endpoint: 'http://127.0.0.1:9' }));
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['endpoint']);
  });

  it('names endpoint, never a key, when the endpoint refuses connections (whatever digits its port has)', async () => {
    // a port with 401 or 403 in it, on which nothing listens: the refusal's message carries the port
    const port = await refusingPort([40100, 40300, 24010, 14030]);
    for (let i = 0; i < 2; i++) {
      const res = await owner.post(
        `/teams/${teamId}/backup-destinations`,
        s3Body({ endpoint: `http://127.0.0.1:${port}` }),
      );
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['endpoint']);
      expect(res.body.error.fields.endpoint).toMatch(/ECONNREFUSED/);
    }
  });

  it('names access_key_id when the store does not know the key (InvalidAccessKeyId)', async () => {
    const before = await t.deps.knex('backup_destinations').count({ n: '*' }).first();
    const unknown = await owner.post(`/teams/${teamId}/backup-destinations`, s3Body({ access_key_id: 'NOBODY' }));
    expect(unknown.status).toBe(422);
    expect(Object.keys(unknown.body.error.fields)).toEqual(['access_key_id']);
    expect(unknown.body.error.fields.access_key_id).toMatch(/InvalidAccessKeyId/);
    expect(unknown.text).not.toContain(s3.secretAccessKey);
    expect(await t.deps.knex('backup_destinations').count({ n: '*' }).first()).toEqual(before);
  });

  it('adds a local directory, refusing one inside DATA_DIR or missing', async () => {
    expect(
      (await owner.post(`/teams/${teamId}/backup-destinations`, { kind: 'local', name: 'in-data', path: t.dataDir }))
        .body.error.fields,
    ).toHaveProperty('path');
    expect(
      (
        await owner.post(`/teams/${teamId}/backup-destinations`, {
          kind: 'local',
          name: 'gone',
          path: join(root, 'missing'),
        })
      ).status,
    ).toBe(422);
    mkdirSync(join(root, 'local'));
    const res = await owner.post(`/teams/${teamId}/backup-destinations`, {
      kind: 'local',
      name: 'disk',
      path: join(root, 'local'),
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ kind: 'local', settings: { path: join(root, 'local') }, secret_fields: [] });
  });

  it('is refused to a viewer (403) and names unknown fields (422)', async () => {
    expect((await viewer.post(`/teams/${teamId}/backup-destinations`, s3Body())).status).toBe(403);
    const res = await owner.post(`/teams/${teamId}/backup-destinations`, { ...s3Body(), colour: 'red' });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toHaveProperty('colour');
  });
});

describe('POST /backup-destinations/{id}', () => {
  it('changes the fields given after probing again; a bad change changes nothing', async () => {
    const created = (await owner.post(`/teams/${teamId}/backup-destinations`, s3Body())).body;
    const bad = await owner.post(`/backup-destinations/${created.id}`, { bucket: 'nope' });
    expect(bad.status).toBe(422);
    expect((await owner.get(`/backup-destinations/${created.id}`)).body.settings.bucket).toBe('backups');
    const wrongKind = await owner.post(`/backup-destinations/${created.id}`, { path: '/tmp' });
    expect(wrongKind.body.error.fields).toHaveProperty('path');
    const ok = await owner.post(`/backup-destinations/${created.id}`, { prefix: 'other', name: 'renamed' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: 'renamed', settings: { prefix: 'other' } });
  });
});

describe('backup window', () => {
  it('GET shows the default; POST sets it with its schedule; DELETE returns to the default', async () => {
    expect((await owner.get(`/projects/${project.id}/backup-window`)).body).toEqual({
      hour_utc: 3,
      retention_days: 7,
      destination_id: null,
      default: true,
    });
    const dest = (await owner.post(`/teams/${teamId}/backup-destinations`, s3Body())).body;
    const set = await owner.post(`/projects/${project.id}/backup-window`, {
      hour_utc: 22,
      retention_days: 3,
      destination_id: dest.id,
    });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ hour_utc: 22, retention_days: 3, destination_id: dest.id, default: false });
    const schedule = await t.deps.temporal.schedule.getHandle(`backups-${project.id}`).describe();
    expect(schedule.spec.calendars?.[0]).toMatchObject({ hour: [{ start: 22, end: 22, step: 1 }] });
    expect((await owner.delete(`/projects/${project.id}/backup-window`)).body.default).toBe(true);
    await expect(t.deps.temporal.schedule.getHandle(`backups-${project.id}`).describe()).rejects.toThrow();
  });

  it("refuses another team's destination with 422 on destination_id", async () => {
    const res = await owner.post(`/projects/${project.id}/backup-window`, {
      hour_utc: 1,
      retention_days: 3,
      destination_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toHaveProperty('destination_id');
  });
});

describe('backup key and downloads', () => {
  let snapshotId: string;
  beforeAll(async () => {
    // A snapshot taken by the engine itself (the backup task is tested in backups.test.ts).
    const dir = join(root, 'dl');
    mkdirSync(dir);
    const dest = (await owner.post(`/teams/${teamId}/backup-destinations`, { kind: 'local', name: 'dl', path: dir }))
      .body;
    const key = await ensureBackupKey(t.deps.knex, t.deps.secrets, envId);
    const vol = join(root, 'vol');
    mkdirSync(vol);
    writeFileSync(join(vol, 'hello.txt'), 'hello');
    const taken = await takeSnapshot({
      config: t.config,
      volumes: { volumeTar },
      source: { login: null, volume: vol },
      key,
      store: openStore({ kind: 'local', settings: { path: dir } }, { outboundAllowedHosts: [] }),
      objectKey: `${envId}/s1.vcb`,
    });
    const [row] = await t.deps
      .knex('backups')
      .insert({
        team_id: teamId,
        project_id: project.id,
        environment_id: envId,
        destination_id: dest.id,
        status: 'available',
        trigger: 'manual',
        contents: JSON.stringify(taken.contents),
        object_key: `${envId}/s1.vcb`,
        size_bytes: taken.sizeBytes,
        sha256: taken.sha256,
        key_fingerprint: keyFingerprint(key),
        finished_at: new Date(),
      })
      .returning('id');
    snapshotId = row.id;
  });

  it('GET /environments/{id}/backup-key says what the key opens, not the key', async () => {
    const res = await owner.get(`/environments/${envId}/backup-key`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ algorithm: 'AES-256-GCM', opens: { snapshots: 1 } });
    expect(res.body.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(res.body).not.toHaveProperty('key');
  });

  it('POST /environments/{id}/backup-key needs a recent sign-in, then reveals the key and records who and from where', async () => {
    await t.deps.knex('sessions').update({ authenticated_at: new Date(Date.now() - 3 * 3600_000) });
    const stale = await owner.post(`/environments/${envId}/backup-key`, {});
    expect(stale.status).toBe(403);
    expect(stale.body.error.code).toBe('reauthentication_required');
    await t.deps.knex('sessions').update({ authenticated_at: new Date() });
    expect((await viewer.post(`/environments/${envId}/backup-key`, {})).status).toBe(403);
    const res = await owner.post(`/environments/${envId}/backup-key`, {});
    expect(res.status).toBe(200);
    expect(Buffer.from(res.body.key, 'base64')).toHaveLength(32);
    const events = await t.deps.knex('activity_events').where({ team_id: teamId, type: 'backup_key_revealed' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: 'backups',
      environment_id: envId,
      address: expect.stringMatching(/127\.0\.0\.1/),
    });
  });

  it('the download URL serves the encrypted snapshot for 15 minutes without credentials; it decrypts with the key', async () => {
    const res = await owner.post(`/environments/${envId}/backups/${snapshotId}/download`, {});
    expect(res.status).toBe(200);
    expect(new Date(res.body.expires_at).getTime() - Date.now()).toBeGreaterThan(14 * 60_000);
    const file = await fetch(res.body.url);
    expect(file.status).toBe(200);
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.subarray(0, 8).toString()).toBe('VCBACKUP');
    // One character of the signature changed (to another one: a signature may start with "0").
    const tampered = await fetch(
      res.body.url.replace(/signature=(.)/, (_: string, c: string) => `signature=${c === '0' ? '1' : '0'}`),
    );
    expect(tampered.status).toBe(403);
    const key = (await owner.post(`/environments/${envId}/backup-key`, {})).body.key;
    writeFileSync(join(root, 's.vcb'), bytes);
    execFileSync('node', [
      'scripts/decrypt-backup.mjs',
      '--key',
      key,
      '--in',
      join(root, 's.vcb'),
      '--out',
      join(root, 'plain'),
    ]);
    expect(execFileSync('tar', ['-xOf', join(root, 'plain', 'files.tar'), './hello.txt']).toString()).toBe('hello');
    expect(readFileSync(join(root, 'plain', 'database.dump'))).toHaveLength(0);
  });

  it('GET /environments/{id}/backups lists it; DELETE removes it from the destination', async () => {
    const list = await owner.get(`/environments/${envId}/backups`);
    expect(list.body.data.map((b: { id: string }) => b.id)).toContain(snapshotId);
    expect((await owner.delete(`/environments/${envId}/backups/${snapshotId}`)).status).toBe(204);
    expect((await owner.get(`/environments/${envId}/backups`)).body.data).toEqual([]);
    expect(() => readFileSync(join(root, 'dl', envId, 's1.vcb'))).toThrow();
  });
});
