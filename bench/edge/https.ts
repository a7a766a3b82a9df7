/**
 * HTTPS through the edge for bench/edge.ts: a certificate issued by Pebble (Let's Encrypt's test CA) through
 * the production path without Temporal (the issuing activity's `obtainCertificate` answering HTTP-01 through
 * the edge on EDGE_PORT, `recordIssued` storing it sealed; the edge writes the file and loads it into HAProxy
 * at runtime), then served by SNI on EDGE_TLS_PORT. A certificate not obtained, or another one served, fails
 * the bench. Also: the p50 of a new TLS handshake (fresh `tls.connect`, time to secureConnect).
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import type { Knex } from 'knex';
import { obtainCertificate } from '../../activities/certificates/acme';
import { claimCertificate, recordIssued } from '../../db/queries/certificates';
import type { Secrets } from '../../system/secrets';
import { startTxtServer, type TxtServer } from '../../test/helpers/dns';
import { startPebble, type Pebble } from '../../test/helpers/pebble';
import { freePort } from '../../test/helpers/ports';

export const HOSTNAME = 'bench-https.example.test';

export interface AcmeWorld {
  edgePort: number;
  tlsPort: number;
  dns: TxtServer;
  pebble: Pebble;
  /** A wrk script that connects to 127.0.0.1 whatever the URL's host (which stays the SNI and Host). */
  loopbackScript: string;
  close(): Promise<void>;
}

/** A DNS server answering HOSTNAME with 127.0.0.1, Pebble resolving with it and validating on EDGE_PORT. */
export async function startAcmeWorld(dir: string): Promise<AcmeWorld> {
  const dns = await startTxtServer();
  dns.setAddresses(HOSTNAME, ['127.0.0.1']);
  const edgePort = await freePort();
  const tlsPort = await freePort();
  const pebble = await startPebble({ dnsServer: dns.server, httpPort: edgePort }).catch(async (err) => {
    await dns.close();
    throw err;
  });
  const loopbackScript = join(dir, 'loopback.lua');
  writeFileSync(
    loopbackScript,
    'function wrk.resolve(host, service)\n  wrk.addrs = wrk.lookup("127.0.0.1", service)\nend\n',
  );
  return {
    edgePort,
    tlsPort,
    dns,
    pebble,
    loopbackScript,
    async close() {
      await pebble.stop();
      await dns.close();
    },
  };
}

/** Inserts HOSTNAME as a verified domain of the environment (its TXT check is another bench's business). */
export async function verifiedDomain(
  knex: Knex,
  e: { teamId: string; projectId: string; environmentId: string },
): Promise<string> {
  const [domain] = await knex('domains')
    .insert({
      team_id: e.teamId,
      project_id: e.projectId,
      environment_id: e.environmentId,
      hostname: HOSTNAME,
      verification_value: randomUUID(),
      status: 'verified',
      verified_at: knex.fn.now(),
    })
    .returning('id');
  return domain.id;
}

/**
 * Asks Pebble for HOSTNAME's certificate as the issuing task's attempt does, then waits until the edge
 * serves exactly that certificate by SNI, trusted through Pebble's root. Returns the CAs to trust.
 */
export async function issueAndAwaitServed(
  world: AcmeWorld,
  o: { knex: Knex; secrets: Secrets; domainId: string },
): Promise<{ ca: string[]; serial: string; issuer: string; seconds: number }> {
  const started = Date.now();
  await claimCertificate(o.knex, o.domainId, randomUUID());
  const issued = await obtainCertificate({
    knex: o.knex,
    secrets: o.secrets,
    acme: {
      directoryUrl: world.pebble.directoryUrl,
      email: 'bench@example.test',
      caFile: world.pebble.caFile,
      tlsPort: world.tlsPort,
      tlsPublicPort: world.tlsPort,
      renewDays: 30,
      retrySeconds: 1,
      attempts: 1,
    },
    domainId: o.domainId,
    hostname: HOSTNAME,
    log: (line) => process.env.BENCH_DEBUG && console.log(`  ${((Date.now() - started) / 1000).toFixed(1)} s ${line}`),
  });
  await recordIssued(o.knex, o.domainId, issued);
  if (process.env.BENCH_DEBUG) console.log(`  ${((Date.now() - started) / 1000).toFixed(1)} s recorded`);
  const ca = [await world.pebble.issuingRoot(), await world.pebble.issuingIntermediate()];
  const deadline = Date.now() + 30_000;
  let last = '';
  for (;;) {
    try {
      const served = await handshake(world.tlsPort, ca);
      if (served === issued.serial) break;
      last = `the edge served serial ${served}, not the issued ${issued.serial}`;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`the edge did not serve ${HOSTNAME}'s new certificate: ${last}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { ca, serial: issued.serial, issuer: issued.issuer, seconds: (Date.now() - started) / 1000 };
}

/** One fresh TLS connection to the edge with HOSTNAME as SNI, verified against `ca`: the leaf's serial. */
function handshake(port: number, ca: string[], timing?: (ms: number) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const socket = tls.connect({ host: '127.0.0.1', port, servername: HOSTNAME, ca, session: undefined }, () => {
      timing?.(Number(process.hrtime.bigint() - t0) / 1e6);
      const raw = socket.getPeerCertificate().raw;
      socket.destroy();
      resolve(new X509Certificate(raw).serialNumber);
    });
    socket.once('error', reject);
  });
}

/** `count` new TLS handshakes one after another (no session resumption): p50 and p99 in ms. */
export async function handshakes(
  port: number,
  ca: string[],
  serial: string,
  count: number,
): Promise<{ p50: number; p99: number; count: number }> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const served = await handshake(port, ca, (ms) => times.push(ms));
    if (served !== serial) throw new Error(`handshake ${i}: the edge served serial ${served}, not ${serial}`);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))] * 1000) / 1000;
  return { p50: at(0.5), p99: at(0.99), count };
}
