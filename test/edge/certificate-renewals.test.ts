/**
 * Automatic HTTPS, what goes wrong and what comes back (Pebble on loopback, nothing mocked): a validation
 * that fails stays `pending` while retried with backoff, ends `failed` with the reason after 5 attempts,
 * serves nothing, and is tried again once its day has come; a certificate within CERTIFICATE_RENEW_DAYS of
 * its end is renewed by the renewal schedule (`certificate_renew`), and a real HAProxy loads the renewed
 * one through its runtime API, serving it by SNI without a reload while an open connection goes on.
 */
import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import tls from 'node:tls';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { useAcmeWorld, type World } from '../helpers/acme-world';
import { ensureCertificateRenewalSchedule } from '../../core/schedules';
import { CertificateFiles, CRT_LIST } from '../../edge/certificate-files';
import { applyCertificateChanges, HaproxyCertificates } from '../../edge/haproxy-certificates';
import { runtimeCommand } from '../../edge/runtime-command';
import { keptAlive, startHaproxy, tlsPeer } from '../helpers/haproxy';
import { awaitEdges, publishEdgeRoute } from '../../db/queries/edge-routes';
import { haproxyPaths } from '../../edge/haproxy/paths';

const a = useAcmeWorld();
const { t, host, world, verifiedDomain, domainOf, until, tasksOf, viaEdge, pemFile, sweep } = a;

/** The subject of the certificate the edge presents for `servername` (untrusted ones too). */
function presented(port: number, servername: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      resolve(s.getPeerX509Certificate()!.subject);
      s.end();
    });
    s.on('error', reject);
  });
}

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
    // and over HTTPS by SNI: the edge's default certificate, nobody else's
    expect(await presented(t.config.acme.tlsPort, hostname)).toBe('CN=default');

    // Tried again once a day: not before (the sweep starts nothing for it)...
    await sweep();
    expect(await tasksOf(domain.id, 'certificate_issue')).toHaveLength(1);
    // ...and once its day has come (the address is there now): issued.
    a.dns.setAddresses(hostname, ['127.0.0.1']);
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
      await sweep();
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
    const pebbleRoot = await a.pebble.issuingRoot();
    const served = async () => {
      const peer = await tlsPeer(haproxy.port, hostname, pebbleRoot);
      return peer.serialNumber;
    };
    let open: Awaited<ReturnType<typeof keptAlive>> | undefined;
    // The edge itself (as processes/edge.ts runs it) in front of an app answering `ok`: a connection kept alive
    // on EDGE_TLS_PORT, and the HAProxy worker that serves it (a reload would start another).
    const app = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    const appPort = (app.address() as { port: number }).port;
    const edgeTls = t.config.acme.tlsPort;
    const edgeWorker = async () =>
      Number(/^Pid: (\d+)/m.exec(await runtimeCommand(haproxyPaths(t.dataDir).admin, 'show info'))?.[1]);
    let edgeOpen: Awaited<ReturnType<typeof keptAlive>> | undefined;
    try {
      await publishEdgeRoute(t.deps.knex, w.environment.id, {
        kind: 'upstream',
        host: '127.0.0.1',
        port: appPort,
        releaseId: null as unknown as string, // no release row: the route is what the edge needs
        upstreams: [{ id: '1', host: '127.0.0.1', port: appPort }],
      });
      expect(await awaitEdges(t.deps.knex)).toEqual([]);
      expect((await tlsPeer(edgeTls, hostname, pebbleRoot)).serialNumber).toBe(first.serial);
      edgeOpen = await keptAlive(edgeTls, hostname, pebbleRoot);
      expect(await edgeOpen.request()).toMatch(/^HTTP\/1\.1 200/);
      const worker = await edgeWorker();
      // The edge closes a connection idle for `timeout http-keep-alive` (5 s), which a renewal under load outlasts:
      // the connection is used every second until the renewed certificate is served, each answer a 200.
      const kept = edgeOpen;
      let keeping = true;
      const keeper = (async () => {
        const answers: string[] = [];
        while (keeping) {
          answers.push(await kept.request());
          await new Promise((r) => setTimeout(r, 1000));
        }
        return answers;
      })();
      // a closed connection fails the test where the keeper is awaited, not as an unhandled rejection meanwhile
      keeper.catch(() => undefined);

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

      // The edge serves the renewed certificate by SNI, loaded at runtime: the same worker, the connection
      // opened before still answered.
      await until(
        'the edge to serve the renewed certificate',
        async () => (await tlsPeer(edgeTls, hostname, pebbleRoot)).serialNumber === renewed.serial,
      );
      keeping = false;
      const answers = await keeper;
      expect(answers.length).toBeGreaterThan(0);
      for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 200/);
      expect(await edgeOpen.request()).toMatch(/^HTTP\/1\.1 200/);
      expect(edgeOpen.closed()).toBe(false);
      expect(await edgeWorker()).toBe(worker);
    } finally {
      open?.end();
      edgeOpen?.end();
      app.close();
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
