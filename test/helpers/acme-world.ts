/**
 * The world of the automatic HTTPS tests: a DNS server and Pebble (Let's Encrypt's test CA) on loopback,
 * started before the system so that ACME_DIRECTORY_URL, ACME_CA_FILE, DNS_SERVERS and EDGE_PORT (Pebble's
 * HTTP-01 port) point at them, a worker and the edge; and the few steps every such test takes.
 * Call `useAcmeWorld()` in a test file's body.
 */
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { until as untilHolds } from './until';
import { useTestContext } from './context';
import { createProject, createTeam, createUser, sessionAgent } from './fixtures';
import { createEnvironment } from './deploy-fixtures';
import { startTxtServer, type TxtServer } from './dns';
import { startPebble, type Pebble } from './pebble';
import { freePort } from './ports';
import { domainListSchema, domainSchema } from '../../api/domains/schemas';
import { certificateDir } from '../../edge/certificate-files';

/** The CA's certificates last 15 minutes: every one is within CERTIFICATE_RENEW_DAYS of its end. */
export const VALIDITY_SECONDS = 900;

/** `env`: settings of the file's system besides the world's (e.g. EDGE_TLS_PUBLIC_PORT). */
export function useAcmeWorld(o: { env?: Record<string, string> } = {}) {
  const env: Record<string, string> = {
    CERTIFICATE_RETRY_SECONDS: '1',
    CERTIFICATE_RENEW_DAYS: '30',
    DOMAIN_RECHECK_SECONDS: '1',
    ...o.env,
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
      EDGE_TLS_PORT: String(await freePort()),
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

  /** helpers/until, and on a timeout the certificates' rows and Pebble's output. */
  const until = <T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 90_000) =>
    untilHolds(what, fn, { timeoutMs, intervalMs: 250 }).catch(async (err: Error) => {
      const certs = await t.deps.knex('certificates').select('status', 'last_error');
      throw new Error(`${err.message}\n${JSON.stringify(certs)}\n${pebble.output().slice(-1500)}`);
    });

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

  /** The edge's file of a hostname (DATA_DIR/edge/certs). */
  const pemFile = (hostname: string) => join(certificateDir(t.dataDir), `${hostname}.pem`);

  /** The renewal schedule's workflow, run once now on the file's worker. */
  const sweep = () =>
    t.deps.temporal.workflow.execute('renewCertificates', {
      taskQueue: t.config.taskQueue,
      workflowId: `test-sweep-${Date.now()}-${Math.random().toString(36).slice(2)}`,
      args: [],
    });

  return {
    t,
    /** The DNS server (after the file's beforeAll). */
    get dns() {
      return dns;
    },
    /** Pebble (after the file's beforeAll). */
    get pebble() {
      return pebble;
    },
    host,
    world,
    verifiedDomain,
    domainOf,
    until,
    tasksOf,
    viaEdge,
    pemFile,
    sweep,
  };
}

type AcmeWorld = ReturnType<typeof useAcmeWorld>;
export type World = Awaited<ReturnType<AcmeWorld['world']>>;
