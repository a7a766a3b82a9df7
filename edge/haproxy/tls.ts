/**
 * HTTPS on the data plane: HAProxy's TLS bind needs a default certificate (served to a client whose SNI names
 * no certificate: a self-signed one, made once) besides the crt-list the certificate files name
 * (edge/certificate-files.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** DATA_DIR/edge/haproxy/default.pem (0600), made with openssl when missing. */
export function defaultCertificate(dir: string): string {
  const file = join(dir, 'default.pem');
  if (existsSync(file)) return file;
  const key = join(dir, 'default.key.tmp');
  const crt = join(dir, 'default.crt.tmp');
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650'].concat([
        '-subj',
        '/CN=default',
        '-keyout',
        key,
        '-out',
        crt,
      ]),
      { stdio: 'ignore' },
    );
    writeFileSync(file, readFileSync(crt, 'utf8') + readFileSync(key, 'utf8'), { mode: 0o600 });
  } finally {
    rmSync(key, { force: true });
    rmSync(crt, { force: true });
  }
  return file;
}

/** The hostnames a crt-list names (`<file> <sni>` lines). */
export function hostsOf(crtList: string): string[] {
  try {
    return readFileSync(crtList, 'utf8')
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[1])
      .filter((h): h is string => Boolean(h));
  } catch {
    return [];
  }
}
