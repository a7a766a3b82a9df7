/**
 * Automatic HTTPS against a real ACME CA (Pebble, Let's Encrypt's test CA) on loopback: a verified domain
 * gets a certificate through a `certificate_issue` task, the edge answers the HTTP-01 challenge on EDGE_PORT
 * (before the environment's rules), the PEM file HAProxy will load is written under DATA_DIR/edge/certs and
 * verifies against Pebble's root, keys appear in no answer or log, renewals run from the schedule, a failed
 * validation ends `failed` with a reason after the retries, and a deleted or moved domain takes its
 * certificate (and file) along. Nothing is mocked: Pebble resolves names through the tests' DNS server and
 * connects to the edge.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { createEnvironment, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { startTxtServer, type TxtServer } from '../helpers/dns';
import { startPebble, type Pebble } from '../helpers/pebble';
import { freePort } from '../helpers/ports';
import { domainListSchema, domainSchema } from '../../api/domains/schemas';
import { certificateDir } from '../../edge/certificate-files';
import { ensureCertificateRenewalSchedule } from '../../activities/certificates/schedule';
import { searchAttributeKeys } from '../../api/lib/tasks';
import { CertificateFiles, CRT_LIST } from '../../edge/certificate-files';
import { applyCertificateChanges, HaproxyCertificates } from '../../edge/haproxy-certificates';
import { keptAlive, startHaproxy, tlsPeer } from '../helpers/haproxy';

// The CA's certificates last 15 minutes: every one is within CERTIFICATE_RENEW_DAYS of its end.
const VALIDITY_SECONDS = 900;
const env: Record<string, string> = {
  CERTIFICATE_RETRY_SECONDS: '1',
  CERTIFICATE_RENEW_DAYS: '30',
  DOMAIN_RECHECK_SECONDS: '1',
};
let dns: TxtServer;
let pebble: Pebble;
beforeAll(async () => {
  dns = await startTxtServer();
  const edgePort = await freePort();
  pebble = await startPebble({ dnsServer: dns.server, httpPort: edgePort, validitySeconds: VALIDITY_SECONDS });
  Object.assign(env, {
    DNS_SERVERS: dns.server,
    EDGE_PORT: String(edgePort),
    ACME_DIRECTORY_URL: pebble.directoryUrl,
    ACME_CA_FILE: pebble.caFile,
    ACME_EMAIL: 'ops@example.test',
  });
}, 120_000);
afterAll(async () => {
  await pebble?.stop();
  await dns?.close();
});

const t = useTestContext({ worker: true, env });

let n = 0;
const host = (label = 'shop') => `${label}${++n}-${Date.now().toString(36)}.example.test`;

async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  const environment = await createEnvironment(t, project, { name: 'production' });
  return { owner, team, project, environment, agent: await sessionAgent(t, owner) };
}

type World = Awaited<ReturnType<typeof world>>;

/** Adds the domain, publishes its TXT record (and its address unless `address` is null), verifies it. */
async function verifiedDomain(w: World, hostname: string, address: string | null = '127.0.0.1') {
  const added = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname });
  expect(added.status, added.text).toBe(201);
  dns.set(`_vc-verify.${hostname}`, [added.body.verification.value]);
  if (address) dns.setAddresses(hostname, [address]);
  const verified = await w.agent.post(`/domains/${added.body.id}/verify`);
  expect(verified.status, verified.text).toBe(200);
  expect(verified.body.status).toBe('verified');
  return domainSchema.parse(verified.body);
}

async function domainOf(w: World, id: string, environmentId = w.environment.id) {
  const res = await w.agent.get(`/environments/${environmentId}/domains`);
  expect(res.status, res.text).toBe(200);
  return domainListSchema.parse(res.body).data.find((d) => d.id === id);
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) {
      const certs = await t.deps.knex('certificates').select('status', 'last_error');
      throw new Error(`timed out waiting for ${what}\n${JSON.stringify(certs)}\n${pebble.output().slice(-1500)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const tasksOf = (domainId: string, type: string) =>
  t.deps.knex('tasks').where({ type }).whereRaw("params->>'domain_id' = ?", [domainId]).orderBy('created_at');

/** GET on EDGE_PORT with a Host header. */
function viaEdge(
  hostname: string,
  path = '/',
): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: t.edge!.port, path, headers: { host: hostname }, agent: false },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
      },
    );
    req.on('error', reject);
  });
}

const pemFile = (hostname: string) => join(certificateDir(t.dataDir), `${hostname}.pem`);

/** A TLS server with the file's certificate and key; a client trusting only Pebble's root connects by SNI. */
async function handshake(file: string, servername: string, root: string): Promise<tls.PeerCertificate> {
  const pem = readFileSync(file);
  const server = tls.createServer({ cert: pem, key: pem }, (s) => s.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as { port: number }).port;
    return await new Promise((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: root }, () => {
        resolve(socket.getPeerCertificate());
        socket.end();
      });
      socket.on('error', reject);
    });
  } finally {
    server.close();
  }
}

describe('certificate_issue: a verified domain gets a certificate from the ACME CA', { timeout: 180_000 }, () => {
  let w: World;
  let domain: Awaited<ReturnType<typeof verifiedDomain>>;
  let hostname: string;

  beforeAll(async () => {
    w = await world();
    // A password on the environment: the CA's challenge must get through anyway (CONTRACT "Certificates").
    const edge = await w.agent.patch(`/environments/${w.environment.id}/edge`, {
      password: { username: 'staff', password: 'correct horse battery' },
    });
    expect(edge.status, edge.text).toBe(200);
    hostname = host();
    domain = await verifiedDomain(w, hostname);
  }, 60_000);

  it('answers the verification with the certificate pending, then shows it issued with issuer and expiry', async () => {
    expect(domain.certificate.status).toBe('pending');
    const issued = await until('the certificate', async () => {
      const d = await domainOf(w, domain.id);
      return d?.certificate.status === 'issued' && d;
    });
    expect(issued.certificate.issuer).toMatch(/^Pebble Intermediate CA/);
    expect(issued.certificate.last_error).toBeNull();
    const expires = Date.parse(issued.certificate.expires_at!);
    expect(expires).toBeGreaterThan(Date.now());
    expect(expires).toBeLessThanOrEqual(Date.now() + (VALIDITY_SECONDS + 60) * 1000);
  });

  it('ran as a configuration/certificate_issue task with the six search attributes and a log', async () => {
    const [row] = await tasksOf(domain.id, 'certificate_issue');
    expect(row).toMatchObject({ kind: 'configuration', type: 'certificate_issue', environment_id: w.environment.id });
    const task = await waitForTask(t, w.agent, row.id);
    expect(task.status, task.error ?? '').toBe('succeeded');
    const desc = await t.deps.temporal.workflow.getHandle(row.workflow_id).describe();
    const k = searchAttributeKeys;
    expect(desc.typedSearchAttributes.get(k.TaskId)).toBe(row.id);
    expect(desc.typedSearchAttributes.get(k.TaskType)).toBe('certificate_issue');
    expect(desc.typedSearchAttributes.get(k.TaskKind)).toBe('configuration');
    expect(desc.typedSearchAttributes.get(k.TeamId)).toBe(w.team.id);
    expect(desc.typedSearchAttributes.get(k.ProjectId)).toBe(w.project.id);
    expect(desc.typedSearchAttributes.get(k.EnvironmentId)).toBe(w.environment.id);
    const log = await taskLog(t, w.agent, row.id);
    expect(log).toContain(`for ${hostname}`);
    expect(log).toContain('HTTP-01');
    expect(log).toMatch(/Issued by Pebble Intermediate CA/);
  });

  it('writes one PEM (chain + key) in a root-only directory, verifying against Pebble root and intermediate', async () => {
    const file = pemFile(hostname);
    await until('the certificate file', async () => existsSync(file));
    expect(statSync(certificateDir(t.dataDir)).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const pem = readFileSync(file, 'utf8');
    const certs: string[] = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    expect(certs.length).toBeGreaterThanOrEqual(2);
    const leaf = new X509Certificate(certs[0]);
    const root = new X509Certificate(await pebble.issuingRoot());
    const intermediate = new X509Certificate(await pebble.issuingIntermediate());
    expect(leaf.checkHost(hostname)).toBe(hostname);
    expect(leaf.verify(intermediate.publicKey)).toBe(true);
    expect(intermediate.verify(root.publicKey)).toBe(true);
    expect(leaf.checkPrivateKey(createPrivateKey(pem))).toBe(true);
    // A real TLS handshake by SNI, trusting nothing but Pebble's root.
    const peer = await handshake(file, hostname, `${await pebble.issuingRoot()}${await pebble.issuingIntermediate()}`);
    expect(peer.subjectaltname).toBe(`DNS:${hostname}`);
    expect(readFileSync(join(certificateDir(t.dataDir), 'crt-list.txt'), 'utf8')).toContain(`${file} ${hostname}\n`);
  });

  it('keeps the keys sealed: not in PostgreSQL in the clear, not in any answer or task log', async () => {
    const pem = readFileSync(pemFile(hostname), 'utf8');
    const keyBody = /-----BEGIN [A-Z ]*PRIVATE KEY-----\n([\s\S]+?)\n-----END/.exec(pem)![1].split('\n')[0];
    const row = await t.deps.knex('certificates').where({ domain_id: domain.id }).first();
    expect(row.private_key_sealed).toMatch(/^v1\./);
    const account = await t.deps.knex('acme_accounts').where({ directory_url: pebble.directoryUrl }).first();
    expect(account.account_key_sealed).toMatch(/^v1\./);
    const everything = JSON.stringify(await t.deps.knex('certificates').select('*'));
    expect(everything).not.toContain('PRIVATE KEY');
    const answers = [
      (await w.agent.get(`/environments/${w.environment.id}/domains`)).text,
      (await w.agent.get(`/tasks?environment=${w.environment.id}`)).text,
    ];
    for (const task of await tasksOf(domain.id, 'certificate_issue')) {
      answers.push((await w.agent.get(`/tasks/${task.id}`)).text, await taskLog(t, w.agent, task.id));
    }
    for (const text of answers) {
      expect(text).not.toContain('PRIVATE KEY');
      expect(text).not.toContain(keyBody);
    }
  });

  it('leaves no challenge behind, and the password still guards everything but the challenge path', async () => {
    expect(await t.deps.knex('acme_challenges').where({ hostname })).toEqual([]);
    expect((await viaEdge(hostname)).status).toBe(401);
    expect((await viaEdge(hostname, '/.well-known/acme-challenge/unknown-token')).status).toBe(401);
  });
});

describe('a domain verified by the background re-check', { timeout: 180_000 }, () => {
  it('gets its certificate too (a task the system started)', async () => {
    const w = await world();
    const hostname = host('later');
    const added = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname });
    expect(added.status, added.text).toBe(201);
    dns.setAddresses(hostname, ['127.0.0.1']);
    dns.set(`_vc-verify.${hostname}`, [added.body.verification.value]);
    const issued = await until('the certificate', async () => {
      const d = await domainOf(w, added.body.id);
      return d?.status === 'verified' && d.certificate.status === 'issued' && d;
    });
    expect(issued.certificate.issuer).toMatch(/^Pebble Intermediate CA/);
    const [task] = await tasksOf(added.body.id, 'certificate_issue');
    expect(task.account_via).toBe('system');
    expect((await waitForTask(t, w.agent, task.id)).status).toBe('succeeded');
  });
});

describe('the HTTP-01 answer on EDGE_PORT', { timeout: 180_000 }, () => {
  it("answers only the console's own token, for its own hostname, and only on EDGE_PORT", async () => {
    const w = await world();
    const mine = host('mine');
    const other = host('other');
    await t.deps.knex('domains').insert([
      {
        team_id: w.team.id,
        project_id: w.project.id,
        environment_id: w.environment.id,
        hostname: mine,
        verification_value: 'x',
        status: 'verified',
      },
      {
        team_id: w.team.id,
        project_id: w.project.id,
        environment_id: w.environment.id,
        hostname: other,
        verification_value: 'y',
        status: 'verified',
      },
    ]);
    await until('the edge to serve both names', async () => {
      const [a, b] = [await viaEdge(mine), await viaEdge(other)];
      return a.status !== 404 && b.status !== 404;
    });
    // A token put there a moment ago (before the edge's notification): looked up, answered.
    await t.deps.knex('acme_challenges').insert({ token: 'tok-1', hostname: mine, key_authorization: 'tok-1.thumb' });
    const answered = await viaEdge(mine, '/.well-known/acme-challenge/tok-1');
    expect(answered).toMatchObject({ status: 200, text: 'tok-1.thumb' });
    // Another hostname asking for it: the environment's own answer (no live release here), not the token.
    const elsewhere = await viaEdge(other, '/.well-known/acme-challenge/tok-1');
    expect(elsewhere.text).not.toContain('tok-1.thumb');
    expect(elsewhere.status).toBe(503);
    // Not on the environment's own port.
    const onEnvPort = await fetch(`http://127.0.0.1:${w.environment.port}/.well-known/acme-challenge/tok-1`, {
      headers: { host: mine },
    }).catch(() => null);
    if (onEnvPort) expect(await onEnvPort.text()).not.toContain('tok-1.thumb');
    await t.deps.knex('acme_challenges').where({ token: 'tok-1' }).delete();
    await until('the token to be forgotten', async () => {
      const r = await viaEdge(mine, '/.well-known/acme-challenge/tok-1');
      return r.status !== 200;
    });
  });
});

describe('a failed validation', { timeout: 180_000 }, () => {
  it('stays pending while retrying, ends failed with a reason after 5 attempts, and serves nothing', async () => {
    const w = await world();
    const hostname = host('nowhere');
    // Verified by its TXT record, but its name has no address: the CA cannot reach the edge.
    const domain = await verifiedDomain(w, hostname, null);
    const retrying = await until('a failed attempt while retrying', async () => {
      const d = await domainOf(w, domain.id);
      return d?.certificate.status === 'pending' && d.certificate.last_error ? d : null;
    });
    expect(retrying.certificate.last_error).toMatch(/CA could not confirm/);
    const failed = await until(
      'the certificate to fail',
      async () => {
        const d = await domainOf(w, domain.id);
        return d?.certificate.status === 'failed' && d;
      },
      120_000,
    );
    expect(failed.certificate).toMatchObject({ status: 'failed', issuer: null, expires_at: null });
    expect(failed.certificate.last_error).toMatch(
      new RegExp(`could not confirm that ${hostname.replace(/\./g, '\\.')}`),
    );
    expect(failed.certificate.last_error).toMatch(/5 attempts; tried again in a day/);
    const [task] = await tasksOf(domain.id, 'certificate_issue');
    const ended = await waitForTask(t, w.agent, task.id);
    expect(ended.status).toBe('failed');
    expect(ended.error).toMatch(/no certificate after 5 attempts/);
    const log = await taskLog(t, w.agent, task.id);
    expect(log.match(/==> Attempt \d failed: the CA could not confirm/g)?.length, log).toBe(5);
    // Nothing served: no file, no challenge left, plain HTTP answered as before (no redirect).
    expect(existsSync(pemFile(hostname))).toBe(false);
    expect(await t.deps.knex('acme_challenges').where({ hostname })).toEqual([]);
    expect((await viaEdge(hostname)).status).toBe(503);

    // Tried again once a day: not before (the sweep starts nothing for it)...
    const sweep = () =>
      t.deps.temporal.workflow.execute('renewCertificates', {
        taskQueue: t.config.taskQueue,
        workflowId: `test-sweep-${Date.now()}`,
        args: [],
      });
    await sweep();
    expect(await tasksOf(domain.id, 'certificate_issue')).toHaveLength(1);
    // ...and once its day has come (the address is there now): issued.
    dns.setAddresses(hostname, ['127.0.0.1']);
    await t.deps
      .knex('certificates')
      .where({ domain_id: domain.id })
      .update({ next_attempt_at: t.deps.knex.raw("now() - interval '1 second'") });
    await sweep();
    const again = await tasksOf(domain.id, 'certificate_issue');
    expect(again).toHaveLength(2);
    expect(again[1].account_via).toBe('schedule');
    await until('the retried certificate', async () => (await domainOf(w, domain.id))?.certificate.status === 'issued');
  }, 180_000);
});

describe('certificate_renew: the renewal schedule', { timeout: 180_000 }, () => {
  it('renews a certificate within CERTIFICATE_RENEW_DAYS of its end, and not before', async () => {
    const w = await world();
    const hostname = host('renew');
    const domain = await verifiedDomain(w, hostname);
    await until('the certificate', async () => (await domainOf(w, domain.id))?.certificate.status === 'issued');
    const first = await t.deps.knex('certificates').where({ domain_id: domain.id }).first();
    await until('the first file', async () => existsSync(pemFile(hostname)));
    const [issuing] = await tasksOf(domain.id, 'certificate_issue');
    expect((await waitForTask(t, w.agent, issuing.id)).status).toBe('succeeded');

    // Not due (it lasts 15 minutes, more than 0 days): nothing renewed.
    t.deps.config.acme.renewDays = 0;
    try {
      await t.deps.temporal.workflow.execute('renewCertificates', {
        taskQueue: t.config.taskQueue,
        workflowId: `test-sweep-${Date.now()}`,
        args: [],
      });
    } finally {
      t.deps.config.acme.renewDays = 30;
    }
    expect(await tasksOf(domain.id, 'certificate_renew')).toEqual([]);

    // HAProxy (the data plane) loads the files as they are now, without a reload; a client trusting only
    // Pebble's root gets the certificate by SNI, and keeps a connection open across the renewal.
    const filesDir = mkdtempSync(join(t.dataDir, 'haproxy-certs-'));
    const files = new CertificateFiles({ knex: t.deps.knex, secrets: t.deps.secrets, dir: filesDir });
    const firstSync = await files.sync();
    expect(firstSync.written).toContain(hostname);
    const haproxy = await startHaproxy({ crtList: join(filesDir, CRT_LIST) });
    const runtime = new HaproxyCertificates(haproxy.socket, haproxy.crtList);
    const pebbleRoot = await pebble.issuingRoot();
    const served = async () => {
      const peer = await tlsPeer(haproxy.port, hostname, pebbleRoot);
      return peer.serialNumber;
    };
    let open: Awaited<ReturnType<typeof keptAlive>> | undefined;
    try {
      await applyCertificateChanges(runtime, (h) => files.path(h), firstSync);
      expect(await served()).toBe(first.serial);
      open = await keptAlive(haproxy.port, hostname, pebbleRoot);
      expect(await open.request()).toMatch(/^HTTP\/1\.1 200/);
      await renewNow(w, domain.id);
      const renewed = await t.deps.knex('certificates').where({ domain_id: domain.id }).first();
      const secondSync = await files.sync();
      expect(secondSync.written).toContain(hostname);
      await applyCertificateChanges(runtime, (h) => files.path(h), secondSync);
      expect(await served()).toBe(renewed.serial);
      expect(await open.request()).toMatch(/^HTTP\/1\.1 200/);
      expect(haproxy.exited()).toBe(false);
    } finally {
      open?.end();
      await haproxy.stop();
    }
    const renewed = await t.deps.knex('certificates').where({ domain_id: domain.id }).first();
    expect(renewed.status).toBe('issued');
    expect(renewed.serial).not.toBe(first.serial);
    expect(renewed.expires_at.getTime()).toBeGreaterThanOrEqual(first.expires_at.getTime());
    // The edge rewrote its own file with the new certificate.
    await until('the renewed file', async () => {
      const leaf = new X509Certificate(readFileSync(pemFile(hostname)));
      return leaf.serialNumber === renewed.serial;
    });
  }, 180_000);

  /** Due: the schedule's run starts a certificate_renew task; waits for it to succeed. */
  async function renewNow(w: World, domainId: string) {
    const { scheduleId } = await ensureCertificateRenewalSchedule(t.deps.temporal, t.config.taskQueue);
    const schedule = t.deps.temporal.schedule.getHandle(scheduleId);
    try {
      await schedule.trigger();
      const [renew] = await until('the renewal task', async () => {
        const rows = await tasksOf(domainId, 'certificate_renew');
        return rows.length > 0 && rows;
      });
      expect(renew).toMatchObject({ kind: 'configuration', account_via: 'schedule' });
      const task = await waitForTask(t, w.agent, renew.id, { timeoutMs: 90_000 });
      expect(task.status, task.error ?? '').toBe('succeeded');
    } finally {
      await schedule.delete().catch(() => undefined);
    }
  }
});

describe('a domain moved or deleted takes its certificate along', { timeout: 180_000 }, () => {
  it('keeps the certificate on a move, and removes it and its file on delete', async () => {
    const w = await world();
    const hostname = host('move');
    const domain = await verifiedDomain(w, hostname);
    const issued = await until('the certificate', async () => {
      const d = await domainOf(w, domain.id);
      return d?.certificate.status === 'issued' && d;
    });
    await until('the file', async () => existsSync(pemFile(hostname)));
    const staging = await createEnvironment(t, w.project, { name: 'staging' });
    const moved = await w.agent.patch(`/domains/${domain.id}`, { environment_id: staging.id });
    expect(moved.status, moved.text).toBe(200);
    expect(domainSchema.parse(moved.body).certificate).toEqual(issued.certificate);
    expect((await domainOf(w, domain.id, staging.id))?.certificate).toEqual(issued.certificate);
    expect(await domainOf(w, domain.id)).toBeUndefined();
    expect(existsSync(pemFile(hostname))).toBe(true);

    expect((await w.agent.delete(`/domains/${domain.id}`)).status).toBe(204);
    expect(await t.deps.knex('certificates').where({ domain_id: domain.id })).toEqual([]);
    await until('the file to go', async () => !existsSync(pemFile(hostname)));
    expect(readFileSync(join(certificateDir(t.dataDir), 'crt-list.txt'), 'utf8')).not.toContain(hostname);
  }, 120_000);
});
