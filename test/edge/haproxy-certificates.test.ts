/**
 * edge/haproxy-certificates.ts against a real HAProxy: a TLS bind with a crt-list, certificates added,
 * replaced and removed through the runtime API. A new certificate is served by SNI at once, without a
 * reload (same process, same uptime), and a TLS connection opened before keeps working through each change.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HaproxyCertificates } from '../../edge/haproxy-certificates';
import { runtimeCommand } from '../../edge/runtime-command';
import { keptAlive, startHaproxy, type Haproxy } from '../helpers/haproxy';

let dir: string;
let haproxy: Haproxy;
const ca = () => readFileSync(join(dir, 'ca.pem'), 'utf8');

const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A certificate for `name` signed by the test CA: the PEM HAProxy loads (leaf, CA, key) and its serial. */
function issue(name: string, tag: string): { pem: string; serial: string } {
  openssl('req', ...ecKey, '-subj', `/CN=${name}`, '-keyout', `${tag}.key`, '-out', `${tag}.csr`);
  writeFileSync(join(dir, `${tag}.ext`), `subjectAltName=DNS:${name}\n`);
  openssl(
    ...['x509', '-req', '-in', `${tag}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1'],
    ...['-extfile', `${tag}.ext`, '-out', `${tag}.crt`],
  );
  const leaf = readFileSync(join(dir, `${tag}.crt`), 'utf8');
  return {
    pem: leaf + ca() + readFileSync(join(dir, `${tag}.key`), 'utf8'),
    serial: new X509Certificate(leaf).serialNumber,
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vc-haproxy-certs-'));
  openssl('req', '-x509', ...ecKey, '-days', '2', '-subj', '/CN=Test CA', '-keyout', 'ca.key', '-out', 'ca.pem');
  haproxy = await startHaproxy();
});

afterAll(async () => {
  await haproxy?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A new TLS connection by SNI: the certificate HAProxy presents, and whether it verifies against the test CA. */
function handshake(servername: string): Promise<{ serial: string; subject: string; trusted: boolean }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect(
      { host: '127.0.0.1', port: haproxy.port, servername, ca: ca(), rejectUnauthorized: false },
      () => {
        const cert = s.getPeerX509Certificate()!;
        resolve({ serial: cert.serialNumber, subject: cert.subject, trusted: s.authorized });
        s.end();
      },
    );
    s.on('error', reject);
  });
}

const longLived = (servername: string) => keptAlive(haproxy.port, servername);

const info = async () => {
  const text = await runtimeCommand(haproxy.socket, 'show info');
  return { pid: Number(/^Pid: (\d+)/m.exec(text)?.[1]), uptime: Number(/^Uptime_sec: (\d+)/m.exec(text)?.[1]) };
};

describe('HaproxyCertificates: certificates through the runtime API, without a reload', () => {
  it('adds, replaces and removes a certificate served by SNI while an open connection goes on', async () => {
    const runtime = new HaproxyCertificates(haproxy.socket, haproxy.crtList);
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
    expect(haproxy.exited()).toBe(false);
  });

  it('refuses a broken PEM with the reason, keeping the certificate it had', async () => {
    const runtime = new HaproxyCertificates(haproxy.socket, haproxy.crtList);
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
