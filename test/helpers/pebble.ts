/**
 * Pebble, Let's Encrypt's test ACME CA, run on loopback for the automatic HTTPS tests: found or built once
 * into a cache (scripts/pebble.mjs), started with its resolver pointed at the tests' DNS server
 * (test/helpers/dns.ts) and its HTTP-01 port at the edge's EDGE_PORT. Its own TLS certificate is made here
 * with openssl; `caFile` is the file to trust for the directory (ACME_CA_FILE). Validation is immediate
 * (PEBBLE_VA_NOSLEEP), no nonce is rejected on purpose, and no authorization is reused (every order is
 * validated again).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensurePebble } from '../../scripts/pebble.mjs';
import { freePort } from './ports';

export interface Pebble {
  directoryUrl: string;
  /** The PEM file of the CA of Pebble's own listeners (not of the certificates it issues). */
  caFile: string;
  /** The root and intermediate the certificates it issues chain to (management API). */
  issuingRoot(): Promise<string>;
  issuingIntermediate(): Promise<string>;
  /** Everything it printed (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

interface PebbleOptions {
  /** Resolver of the CA's validations: the tests' DNS server, "127.0.0.1:port". */
  dnsServer: string;
  /** Where HTTP-01 is validated: the edge's EDGE_PORT. */
  httpPort: number;
  /** How long the certificates it issues last (default 90 days). */
  validitySeconds?: number;
}

export async function startPebble(o: PebbleOptions): Promise<Pebble> {
  const bin = ensurePebble();
  const dir = mkdtempSync(join(tmpdir(), 'vc-pebble-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  const [listen, management] = [await freePort(), await freePort()];
  const validityPeriod = o.validitySeconds ?? 7_776_000;
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${listen}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: cert,
        privateKey: key,
        httpPort: o.httpPort,
        tlsPort: await freePort(),
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
        retryAfter: { authz: 1, order: 1 },
        keyAlgorithm: 'ecdsa',
        profiles: { default: { description: 'tests', validityPeriod } },
      },
    }),
  );
  let output = '';
  const child: ChildProcess = spawn(bin, ['-config', join(dir, 'config.json'), '-dnsserver', o.dnsServer], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c) => (output += c));
  child.stderr?.on('data', (c) => (output += c));
  const ca = readFileSync(cert, 'utf8');
  const get = (port: number, path: string) =>
    new Promise<string>((resolve, reject) => {
      const req = https.get(
        { host: '127.0.0.1', port, path, ca, servername: 'localhost', headers: { 'user-agent': 'vc-console-tests' } },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () =>
            res.statusCode === 200 ? resolve(body) : reject(new Error(`${path}: ${res.statusCode} ${body}`)),
          );
        },
      );
      req.on('error', reject);
    });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pebble exited: ${output}`);
    try {
      await get(listen, '/dir');
      break;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`pebble did not answer: ${(err as Error).message}\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    directoryUrl: `https://127.0.0.1:${listen}/dir`,
    caFile: cert,
    issuingRoot: () => get(management, '/roots/0'),
    issuingIntermediate: () => get(management, '/intermediates/0'),
    output: () => output,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
