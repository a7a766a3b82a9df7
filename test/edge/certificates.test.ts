/**
 * Automatic HTTPS against a real ACME CA (Pebble, Let's Encrypt's test CA) on loopback: a verified domain
 * gets a certificate through a `certificate_issue` task (after POST /domains/{id}/verify or the background
 * re-check), the edge answers the HTTP-01 challenge on EDGE_PORT (before the environment's rules, only the
 * console's own tokens for their hostname), the PEM file HAProxy loads is written under DATA_DIR/edge/certs
 * and verifies against Pebble's root, keys appear in no answer or log, and a deleted or moved domain takes its
 * certificate (and file) along. Nothing is mocked: Pebble resolves names through the tests' DNS server and
 * connects to the edge.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { describe, expect, it, beforeAll } from 'vitest';
import { createEnvironment, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { useAcmeWorld, VALIDITY_SECONDS, type World } from '../helpers/acme-world';
import { domainSchema } from '../../api/domains/schemas';
import { certificateDir } from '../../edge/certificate-files';
import { searchAttributeKeys } from '../../core/temporal-starts';
import { awaitEdges, publishEdgeRoute } from '../../db/queries/edge-routes';

// The edge's HTTPS behind a port forward (443 -> EDGE_TLS_PORT): redirects name the public port, here none.
const a = useAcmeWorld({ env: { EDGE_TLS_PUBLIC_PORT: '443' } });
const { t, host, world, verifiedDomain, domainOf, until, tasksOf, viaEdge, pemFile } = a;

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

/** GET / over TLS on the edge by SNI, trusting only `root`: the status, the certificate and the protocol. */
function viaTls(
  servername: string,
  port: number,
  root: string,
  headers: Record<string, string> = {},
  maxVersion?: tls.SecureVersion,
): Promise<{
  status: number;
  headers: http.IncomingHttpHeaders;
  peer: tls.PeerCertificate;
  protocol: string | null;
  text: string;
}> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        servername,
        ca: root,
        headers: { host: servername, ...headers },
        agent: false,
        ...(maxVersion ? { maxVersion, minVersion: 'TLSv1' as const, ciphers: 'DEFAULT@SECLEVEL=0' } : {}),
      },
      (res) => {
        const socket = res.socket as tls.TLSSocket;
        const out = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          peer: socket.getPeerCertificate(),
          protocol: socket.getProtocol(),
          text: '',
        };
        res.on('data', (c) => (out.text += c));
        res.on('end', () => resolve(out));
      },
    );
    req.on('error', reject);
  });
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
    const root = new X509Certificate(await a.pebble.issuingRoot());
    const intermediate = new X509Certificate(await a.pebble.issuingIntermediate());
    expect(leaf.checkHost(hostname)).toBe(hostname);
    expect(leaf.verify(intermediate.publicKey)).toBe(true);
    expect(intermediate.verify(root.publicKey)).toBe(true);
    expect(leaf.checkPrivateKey(createPrivateKey(pem))).toBe(true);
    // A real TLS handshake by SNI, trusting nothing but Pebble's root.
    const peer = await handshake(
      file,
      hostname,
      `${await a.pebble.issuingRoot()}${await a.pebble.issuingIntermediate()}`,
    );
    expect(peer.subjectaltname).toBe(`DNS:${hostname}`);
    expect(readFileSync(join(certificateDir(t.dataDir), 'crt-list.txt'), 'utf8')).toContain(`${file} ${hostname}\n`);
  });

  it('keeps the keys sealed: not in PostgreSQL in the clear, not in any answer or task log', async () => {
    const pem = readFileSync(pemFile(hostname), 'utf8');
    const keyBody = /-----BEGIN [A-Z ]*PRIVATE KEY-----\n([\s\S]+?)\n-----END/.exec(pem)![1].split('\n')[0];
    const row = await t.deps.knex('certificates').where({ domain_id: domain.id }).first();
    expect(row.private_key_sealed).toMatch(/^v1\./);
    const account = await t.deps.knex('acme_accounts').where({ directory_url: a.pebble.directoryUrl }).first();
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

  it('serves the domain on EDGE_TLS_PORT by SNI with its certificate; plain HTTP gets 308 to EDGE_TLS_PUBLIC_PORT, never the ACME path', async () => {
    const root = await a.pebble.issuingRoot();
    const tlsPort = t.config.acme.tlsPort;
    // a redirect keeps the path and query
    const plain = await until('the redirect', async () => {
      const r = await viaEdge(hostname, '/a/b?c=1');
      return r.status === 308 && r;
    });
    expect(t.config.acme.tlsPublicPort).toBe(443);
    expect(plain.headers.location).toBe(`https://${hostname}/a/b?c=1`);
    // HSTS on answers to HTTPS requests (the edge's own TLS), never over plain HTTP
    const hsts = await w.agent.patch(`/projects/${w.project.id}/edge`, { hsts: { max_age: 600 } });
    expect(hsts.status, hsts.text).toBe(200);
    await awaitEdges(t.deps.knex);
    const answer = await viaTls(hostname, tlsPort, root, { 'x-forwarded-proto': 'http' });
    expect(answer.peer.subjectaltname).toContain(`DNS:${hostname}`);
    expect(answer.protocol).toMatch(/^TLSv1\.[23]$/);
    expect(answer.status).not.toBe(308);
    expect(answer.headers['strict-transport-security']).toBe('max-age=600');
    // never on plain HTTP: neither the redirect nor the challenge path
    const redirect = await viaEdge(hostname, '/a');
    expect(redirect.status).toBe(308);
    expect(redirect.headers['strict-transport-security']).toBeUndefined();
    expect(
      (await viaEdge(hostname, '/.well-known/acme-challenge/x')).headers['strict-transport-security'],
    ).toBeUndefined();
  });

  it('speaks TLS 1.2 and 1.3 only: a client offering at most TLS 1.1 or 1.0 is refused by the edge', async () => {
    const root = await a.pebble.issuingRoot();
    const tlsPort = t.config.acme.tlsPort;
    expect((await viaTls(hostname, tlsPort, root)).protocol).toBe('TLSv1.3');
    // The same weakened client (TLS 1.0 allowed, security level 0) gets TLS 1.2 when it may offer it...
    const v12 = await viaTls(hostname, tlsPort, root, {}, 'TLSv1.2');
    expect(v12).toMatchObject({ protocol: 'TLSv1.2', status: 401 });
    // ...and the edge's protocol_version alert when it offers no more than TLS 1.1 (the client could speak it).
    for (const max of ['TLSv1.1', 'TLSv1'] as const) {
      const refused: NodeJS.ErrnoException = await viaTls(hostname, tlsPort, root, {}, max).then(
        (r) => new Error(`answered over ${r.protocol}`),
        (err: NodeJS.ErrnoException) => err,
      );
      // the alert the edge sent (70, protocol_version), not a client that gave up by itself
      expect(refused.code, `${max}: ${refused.message}`).toBe('EPROTO');
      expect(refused.message).toMatch(/tlsv1 alert protocol version.*SSL alert number 70/);
    }
  });

  it('leaves no challenge behind, and the password still guards everything but the challenge path', async () => {
    expect(await t.deps.knex('acme_challenges').where({ hostname })).toEqual([]);
    expect((await viaTls(hostname, t.config.acme.tlsPort, await a.pebble.issuingRoot())).status).toBe(401);
    expect((await viaEdge(hostname, '/.well-known/acme-challenge/unknown-token')).status).toBe(401);
  });
});

describe('a domain verified by the background re-check', { timeout: 180_000 }, () => {
  it('gets its certificate too (a task the system started)', async () => {
    const w = await world();
    const hostname = host('later');
    const added = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname });
    expect(added.status, added.text).toBe(201);
    a.dns.setAddresses(hostname, ['127.0.0.1']);
    a.dns.set(`_vc-verify.${hostname}`, [added.body.verification.value]);
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
    // A token the console puts there is answered once the edge has it (an order waits for every live edge).
    await t.deps.knex('acme_challenges').insert({ token: 'tok-1', hostname: mine, key_authorization: 'tok-1.thumb' });
    await awaitEdges(t.deps.knex);
    const answered = await viaEdge(mine, '/.well-known/acme-challenge/tok-1');
    expect(answered).toMatchObject({ status: 200, text: 'tok-1.thumb' });
    // Another hostname asking for it: the environment's own answer (no live release here), not the token.
    const elsewhere = await viaEdge(other, '/.well-known/acme-challenge/tok-1');
    expect(elsewhere.text).not.toContain('tok-1.thumb');
    expect(elsewhere.status).toBe(503);
    // Not on the environment's own port.
    const onEnvPort = await fetch(`http://127.0.0.1:${w.environment.port}/.well-known/acme-challenge/tok-1`, {
      headers: { host: mine },
    });
    expect(onEnvPort.status).toBe(503);
    expect(await onEnvPort.text()).not.toContain('tok-1.thumb');
    await t.deps.knex('acme_challenges').where({ token: 'tok-1' }).delete();
    await until('the token to be forgotten', async () => {
      const r = await viaEdge(mine, '/.well-known/acme-challenge/tok-1');
      return r.status !== 200;
    });
  });
});

/** A stand-in for an environment's app on loopback: answers its name; the edge is told to serve it. */
async function appOf(environmentId: string, name: string): Promise<http.Server> {
  const server = http.createServer((_req, res) => res.end(name));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await publishEdgeRoute(t.deps.knex, environmentId, {
    kind: 'upstream',
    host: '127.0.0.1',
    port,
    // no release row: the route is what the edge needs (as test/helpers/served.ts)
    releaseId: null as unknown as string,
    upstreams: [{ id: '1', host: '127.0.0.1', port }],
  });
  return server;
}

/** The certificate the edge presents on EDGE_TLS_PORT for `servername`, trusted or not. */
function presented(servername: string, ca: string): Promise<{ serial: string; subject: string; trusted: boolean }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect(
      { host: '127.0.0.1', port: t.config.acme.tlsPort, servername, ca, rejectUnauthorized: false },
      () => {
        const cert = s.getPeerX509Certificate()!;
        resolve({ serial: cert.serialNumber, subject: cert.subject, trusted: s.authorized });
        s.end();
      },
    );
    s.on('error', reject);
  });
}

describe('a domain moved or deleted takes its certificate along', { timeout: 180_000 }, () => {
  it("is served over HTTPS by the new environment's app at once on a move; a delete stops serving it", async () => {
    const w = await world();
    const staging = await createEnvironment(t, w.project, { name: 'staging' });
    const apps = [await appOf(w.environment.id, 'production app'), await appOf(staging.id, 'staging app')];
    try {
      const hostname = host('move');
      const domain = await verifiedDomain(w, hostname);
      const issued = await until('the certificate', async () => {
        const d = await domainOf(w, domain.id);
        return d?.certificate.status === 'issued' && d;
      });
      const { serial } = await t.deps.knex('certificates').where({ domain_id: domain.id }).first('serial');
      const root = await a.pebble.issuingRoot();
      const tlsPort = t.config.acme.tlsPort;
      const before = await until('production over HTTPS', async () => {
        const r = await viaTls(hostname, tlsPort, root).catch(() => null);
        return r?.text === 'production app' && r;
      });
      expect(before.peer.serialNumber).toBe(serial);

      const moved = await w.agent.patch(`/domains/${domain.id}`, { environment_id: staging.id });
      expect(moved.status, moved.text).toBe(200);
      expect(domainSchema.parse(moved.body).certificate).toEqual(issued.certificate);
      expect((await domainOf(w, domain.id, staging.id))?.certificate).toEqual(issued.certificate);
      expect(await domainOf(w, domain.id)).toBeUndefined();
      // The same certificate, now in front of the staging app, when the move answers (no renewal, no wait here).
      const after = await viaTls(hostname, tlsPort, root);
      expect(after).toMatchObject({ status: 200, text: 'staging app' });
      expect(after.peer.serialNumber).toBe(serial);
      expect(existsSync(pemFile(hostname))).toBe(true);
      expect((await viaEdge(hostname, '/x')).headers.location).toBe(`https://${hostname}/x`);

      expect((await w.agent.delete(`/domains/${domain.id}`)).status).toBe(204);
      expect(await t.deps.knex('certificates').where({ domain_id: domain.id })).toEqual([]);
      // When the delete answers, the edges serve it no more: the default certificate for the name, no redirect,
      // no app behind it, no file.
      expect(await presented(hostname, root)).toMatchObject({ subject: 'CN=default', trusted: false });
      expect((await viaEdge(hostname)).status).toBe(404);
      expect(existsSync(pemFile(hostname))).toBe(false);
      expect(readFileSync(join(certificateDir(t.dataDir), 'crt-list.txt'), 'utf8')).not.toContain(hostname);
    } finally {
      for (const app of apps) app.close();
    }
  }, 120_000);
});
