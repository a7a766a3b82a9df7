/**
 * edge/haproxy-certificates.ts against a real HAProxy: a TLS bind with a crt-list, certificates added,
 * replaced and removed through the runtime API. A new certificate is served by SNI at once, without a
 * reload (same process, same uptime), and a TLS connection opened before keeps working through each change.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HaproxyCertificates, runtimeCommand } from '../../edge/haproxy-certificates';
import { freePort } from '../helpers/ports';

let dir: string;
let haproxy: ChildProcess;
let port: number;
let socket: string;
let crtList: string;
let output = '';
const ca = () => readFileSync(join(dir, 'ca.pem'), 'utf8');

const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A certificate for `name` signed by the test CA: the PEM HAProxy loads (leaf, CA, key) and its serial. */
function issue(name: string, tag: string): { pem: string; serial: string } {
  openssl('req', ...ecKey, '-subj', `/CN=${name}`, '-keyout', `${tag}.key`, '-out', `${tag}.csr`);
  writeFileSync(join(dir, `${tag}.ext`), `subjectAltName=DNS:${name}\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    `${tag}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    `${tag}.ext`,
    '-out',
    `${tag}.crt`,
  );
  const leaf = readFileSync(join(dir, `${tag}.crt`), 'utf8');
  return {
    pem: leaf + ca() + readFileSync(join(dir, `${tag}.key`), 'utf8'),
    serial: new X509Certificate(leaf).serialNumber,
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vc-haproxy-'));
  openssl('req', '-x509', ...ecKey, '-days', '2', '-subj', '/CN=Test CA', '-keyout', 'ca.key', '-out', 'ca.pem');
  openssl('req', '-x509', ...ecKey, '-days', '2', '-subj', '/CN=default', '-keyout', 'd.key', '-out', 'd.crt');
  writeFileSync(join(dir, 'default.pem'), readFileSync(join(dir, 'd.crt'), 'utf8') + readFileSync(join(dir, 'd.key')));
  crtList = join(dir, 'crt-list.txt');
  writeFileSync(crtList, `${join(dir, 'default.pem')}\n`);
  socket = join(dir, 'admin.sock');
  port = await freePort();
  writeFileSync(
    join(dir, 'haproxy.cfg'),
    [
      'global',
      `  stats socket ${socket} level admin`,
      'defaults',
      '  mode http',
      '  timeout client 60s',
      '  timeout server 60s',
      '  timeout connect 5s',
      '  timeout http-keep-alive 60s',
      'frontend tls',
      `  bind 127.0.0.1:${port} ssl crt-list ${crtList} ssl-min-ver TLSv1.2`,
      '  http-request return status 200 content-type text/plain string ok',
      '',
    ].join('\n'),
  );
  haproxy = spawn('haproxy', ['-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
  haproxy.stdout?.on('data', (c) => (output += c));
  haproxy.stderr?.on('data', (c) => (output += c));
  const deadline = Date.now() + 20_000;
  while (!existsSync(socket)) {
    if (haproxy.exitCode !== null || Date.now() > deadline) throw new Error(`haproxy did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
});

afterAll(async () => {
  if (haproxy && haproxy.exitCode === null) {
    const exited = new Promise((r) => haproxy.once('exit', r));
    haproxy.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

/** A new TLS connection by SNI: the certificate HAProxy presents, and whether it verifies against the test CA. */
function handshake(servername: string): Promise<{ serial: string; subject: string; trusted: boolean }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername, ca: ca(), rejectUnauthorized: false }, () => {
      const cert = s.getPeerX509Certificate()!;
      resolve({ serial: cert.serialNumber, subject: cert.subject, trusted: s.authorized });
      s.end();
    });
    s.on('error', reject);
  });
}

/** A kept-alive HTTPS connection: one request at a time on the same TLS session. */
async function longLived(servername: string) {
  const s = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => {
    s.once('secureConnect', resolve);
    s.once('error', reject);
  });
  let closed = false;
  s.on('close', () => (closed = true));
  return {
    closed: () => closed,
    request(): Promise<string> {
      return new Promise((resolve, reject) => {
        let answer = '';
        const onData = (c: Buffer) => {
          answer += c.toString();
          if (answer.includes('\r\n\r\n') && answer.endsWith('ok')) {
            s.off('data', onData);
            resolve(answer);
          }
        };
        s.on('data', onData);
        s.once('error', reject);
        s.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\n\r\n`);
      });
    },
    end: () => s.end(),
  };
}

const info = async () => {
  const text = await runtimeCommand(socket, 'show info');
  return { pid: Number(/^Pid: (\d+)/m.exec(text)?.[1]), uptime: Number(/^Uptime_sec: (\d+)/m.exec(text)?.[1]) };
};

describe('HaproxyCertificates: certificates through the runtime API, without a reload', () => {
  it('adds, replaces and removes a certificate served by SNI while an open connection goes on', async () => {
    const runtime = new HaproxyCertificates(socket, crtList);
    const file = join(dir, 'shop.example.test.pem');
    const before = await info();
    expect(before.pid).toBe(haproxy.pid);

    // Nothing for the name yet: the default certificate, which the test CA does not vouch for.
    expect(await handshake('shop.example.test')).toMatchObject({ subject: 'CN=default', trusted: false });
    const open = await longLived('shop.example.test');
    expect(await open.request()).toMatch(/^HTTP\/1\.1 200/);

    const v1 = issue('shop.example.test', 'v1');
    expect(await runtime.load(file, 'shop.example.test', v1.pem)).toBe('added');
    expect(await handshake('shop.example.test')).toEqual({
      serial: v1.serial,
      subject: 'CN=shop.example.test',
      trusted: true,
    });
    expect(await open.request()).toMatch(/^HTTP\/1\.1 200/);

    // Renewed: the same entry replaced in place.
    const v2 = issue('shop.example.test', 'v2');
    expect(await runtime.load(file, 'shop.example.test', v2.pem)).toBe('updated');
    expect(await handshake('shop.example.test')).toMatchObject({ serial: v2.serial, trusted: true });
    expect(await open.request()).toMatch(/^HTTP\/1\.1 200/);
    expect(open.closed()).toBe(false);
    // Another name is not given this certificate.
    expect((await handshake('other.example.test')).subject).toBe('CN=default');

    await runtime.remove(file);
    expect(await handshake('shop.example.test')).toMatchObject({ subject: 'CN=default', trusted: false });
    expect(await runtime.loaded()).not.toContain(file);
    expect(await open.request()).toMatch(/^HTTP\/1\.1 200/);
    open.end();

    // No reload happened: the same process, still counting its uptime.
    const after = await info();
    expect(after.pid).toBe(before.pid);
    expect(after.uptime).toBeGreaterThanOrEqual(before.uptime);
    expect(haproxy.exitCode).toBeNull();
  });

  it('refuses a broken PEM with the reason, keeping the certificate it had', async () => {
    const runtime = new HaproxyCertificates(socket, crtList);
    const file = join(dir, 'keep.example.test.pem');
    const good = issue('keep.example.test', 'keep');
    await runtime.load(file, 'keep.example.test', good.pem);
    const refused = await runtime.load(file, 'keep.example.test', 'not a certificate').catch((e: Error) => e);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/^set ssl cert/);
    expect((refused as Error).message).not.toContain('not a certificate');
    expect(await handshake('keep.example.test')).toMatchObject({ serial: good.serial, trusted: true });
  });
});
