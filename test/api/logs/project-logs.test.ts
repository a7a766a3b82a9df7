/**
 * GET/POST /projects/{id}/logs and GET /environments/{id}/logs (CONTRACT "Logs"): a save makes a real test
 * send to a real collector on loopback (HTTP receiver, UDP and TCP syslog listeners) and reports it in
 * can_send/last_error; the URL is sealed at rest and shown without credentials; bad input is refused
 * naming each field and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext, type TestContext } from '../../helpers/context';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { startReceiver, type Receiver } from '../../helpers/receiver';
import { startSyslog, type SyslogListener } from '../../helpers/syslog';
import type { Agent } from '../../helpers/http';
import { createEnvironmentMachines } from '../../../api/machines/service';

const t: TestContext = useTestContext({ env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let owner: Agent;
let viewer: Agent;
let project: { id: string; team_id: string };
let envId: string;
let receiver: Receiver;
let udp: SyslogListener;
let tcp: SyslogListener;

beforeAll(async () => {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  owner = await sessionAgent(t, user);
  const v = await createUser(t);
  await addMember(t, team, v, 'viewer');
  viewer = await sessionAgent(t, v);
  project = await createProject(t, team);
  const env = await createEnvironment(t, project, { name: 'production' });
  envId = env.id;
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, env));
  receiver = await startReceiver(0, '/ingest');
  udp = await startSyslog('udp');
  tcp = await startSyslog('tcp');
});
afterAll(async () => {
  await receiver?.stop();
  await udp?.stop();
  await tcp?.stop();
});

const row = () => t.deps.knex('project_log_settings').where({ project_id: project.id }).first();

describe('GET /projects/{id}/logs', () => {
  it('answers no destination and 7 days before anything is set', async () => {
    const res = await owner.get(`/projects/${project.id}/logs`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      destination: null,
      can_send: false,
      last_sent_at: null,
      last_error: null,
      keep_days_on_machine: 7,
    });
  });
});

describe('POST /projects/{id}/logs', () => {
  it('saves an http destination after a test send that arrived, sealed, shown without credentials', async () => {
    const before = receiver.received.length;
    const url = `http://shipper:s3cr3t-pass@127.0.0.1:${receiver.port}/ingest?token=tok-123-secret&source=vc`;
    const res = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'collector', url },
      keep_days_on_machine: 5,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      destination: {
        kind: 'http',
        name: 'collector',
        url: `http://127.0.0.1:${receiver.port}/ingest?token=redacted&source=redacted`,
      },
      can_send: true,
      last_error: null,
      keep_days_on_machine: 5,
    });
    expect(Date.parse(res.body.last_sent_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(res.text).not.toContain('s3cr3t-pass');
    expect(res.text).not.toContain('tok-123-secret');

    const [got] = (await receiver.waitFor(before + 1)).slice(before);
    expect(got.headers['content-type']).toBe('application/x-ndjson');
    expect(got.headers.authorization).toBe(`Basic ${Buffer.from('shipper:s3cr3t-pass').toString('base64')}`);
    const lines = got.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([expect.objectContaining({ type: 'test', project_id: project.id })]);

    const saved = await row();
    expect(saved.url_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(saved)).not.toContain('tok-123-secret');
    expect(JSON.stringify(saved)).not.toContain('s3cr3t-pass');

    const events = await t.deps
      .knex('activity_events')
      .where({ project_id: project.id, type: 'log_forwarding_changed' });
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(events)).not.toContain('tok-123-secret');

    const again = await owner.get(`/projects/${project.id}/logs`);
    expect(again.body).toEqual(res.body);
  });

  it('saves with can_send false and last_error when the collector answers 404', async () => {
    receiver.answers.push(404);
    const res = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'wrong path', url: `http://127.0.0.1:${receiver.port}/nothing` },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ can_send: false, last_error: expect.stringContaining('404') });
    expect((await row()).name).toBe('wrong path');
  });

  it('saves with can_send false when nothing listens there', async () => {
    const down = await startReceiver();
    await down.stop();
    const res = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'down', url: down.url },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ can_send: false, last_error: 'the connection was refused' });
  });

  it('sends an RFC 5424 test line to a UDP syslog listener', async () => {
    const res = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'syslog', name: 'udp syslog', host: '127.0.0.1', port: udp.port, protocol: 'udp' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      destination: { kind: 'syslog', name: 'udp syslog', host: '127.0.0.1', port: udp.port, protocol: 'udp' },
      can_send: true,
      last_error: null,
    });
    const [msg] = await udp.waitFor((m) => m.length > 0);
    expect(msg).toMatch(/^<134>1 \d{4}-\d{2}-\d{2}T[\d:.]+Z \S+ edge - test - \{/);
    expect(JSON.parse(msg.slice(msg.indexOf('{')))).toMatchObject({ type: 'test', project_id: project.id });
  });

  it('sends an octet-counted test line over TCP, and reports a refused TCP connection', async () => {
    const res = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'syslog', name: 'tcp syslog', host: '127.0.0.1', port: tcp.port, protocol: 'tcp' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.can_send).toBe(true);
    const [msg] = await tcp.waitFor((m) => m.length > 0);
    expect(msg).toMatch(/^<134>1 .* edge - test - \{.*\}$/);

    const closed = await startSyslog('tcp');
    await closed.stop();
    const bad = await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'syslog', name: 'closed', host: '127.0.0.1', port: closed.port, protocol: 'tcp' },
    });
    expect(bad.status, bad.text).toBe(200);
    expect(bad.body).toMatchObject({ can_send: false, last_error: 'the connection was refused' });
  });

  it('changes only keep_days_on_machine when given alone, testing the destination again', async () => {
    await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'syslog', name: 'tcp syslog', host: '127.0.0.1', port: tcp.port, protocol: 'tcp' },
    });
    const count = tcp.messages.length;
    const res = await owner.post(`/projects/${project.id}/logs`, { keep_days_on_machine: 12 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ destination: { name: 'tcp syslog' }, can_send: true, keep_days_on_machine: 12 });
    await tcp.waitFor((m) => m.length > count);
    expect(tcp.messages.length).toBe(count + 1);
  });

  it('refuses bad input naming each field, and keeps nothing', async () => {
    const before = await row();
    const cases: Array<[unknown, string[]]> = [
      [{ destination: { kind: 'http', name: 'x', url: 'ftp://example.com/x' } }, ['destination.url']],
      [{ destination: { kind: 'http', name: '', url: 'not a url' } }, ['destination.name', 'destination.url']],
      [
        { destination: { kind: 'syslog', name: 's', host: '127.0.0.1', port: 70000, protocol: 'icmp' } },
        ['destination.port', 'destination.protocol'],
      ],
      [{ keep_days_on_machine: 31 }, ['keep_days_on_machine']],
      [{ keep_days_on_machine: 0 }, ['keep_days_on_machine']],
      [{ destination: { kind: 'http', name: 'x', url: 'http://10.1.2.3/in' } }, ['destination.url']],
      [
        { destination: { kind: 'syslog', name: 's', host: '192.168.1.1', port: 514, protocol: 'udp' } },
        ['destination.host'],
      ],
    ];
    for (const [body, fields] of cases) {
      const res = await owner.post(`/projects/${project.id}/logs`, body as object);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.error.fields).sort(), res.text).toEqual(fields.sort());
    }
    const kind = await owner.post(`/projects/${project.id}/logs`, { destination: { kind: 'ftp', name: 'x' } });
    expect(kind.status).toBe(422);
    expect(Object.keys(kind.body.error.fields).some((f) => f.startsWith('destination'))).toBe(true);
    expect(await row()).toEqual(before);
  });

  it('removes the destination with null', async () => {
    const res = await owner.post(`/projects/${project.id}/logs`, { destination: null });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ destination: null, can_send: false, last_error: null, keep_days_on_machine: 12 });
    expect((await row()).url_sealed).toBeNull();
  });

  it('is refused to a viewer (403), who may read it', async () => {
    const res = await viewer.post(`/projects/${project.id}/logs`, { keep_days_on_machine: 3 });
    expect(res.status).toBe(403);
    expect((await viewer.get(`/projects/${project.id}/logs`)).status).toBe(200);
    expect((await row()).keep_days_on_machine).toBe(12);
  });
});

describe('GET /environments/{id}/logs', () => {
  it("shows the project's destination by kind and name and what each machine keeps", async () => {
    await owner.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'collector', url: receiver.url },
      keep_days_on_machine: 9,
    });
    const servers = await t.deps.knex('servers').where({ environment_id: envId }).select('id');
    expect(servers).toHaveLength(1);
    const res = await owner.get(`/environments/${envId}/logs`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      destination: { kind: 'http', name: 'collector' },
      can_send: true,
      machines: servers.map((s: { id: string }) => ({ server_id: s.id, keeps_days: 9 })),
    });
  });
});
