/**
 * A real HAProxy on loopback for the TLS tests: one TLS bind (TLS 1.2 and 1.3) with a self-signed default
 * certificate and a crt-list, every request answered `200 ok`, and an admin runtime socket. Started in the
 * foreground (-db), stopped by its pid.
 */
import { spawn } from 'node:child_process';
import type { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { defaultCertificate } from '../../edge/haproxy/tls';
import { runtimeCommand } from '../../edge/runtime-command';
import { freePort } from './ports';

export interface Haproxy {
  port: number;
  socket: string;
  /** The crt-list the bind names (given, or an empty one made here). */
  crtList: string;
  pid: number;
  exited(): boolean;
  stop(): Promise<void>;
}

export async function startHaproxy(o: { crtList?: string } = {}): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'vc-haproxy-'));
  // the edge's own default certificate (self-signed), made the same way
  const defaultPem = defaultCertificate(dir);
  const crtList = o.crtList ?? join(dir, 'crt-list.txt');
  if (!existsSync(crtList)) writeFileSync(crtList, '');
  const socket = join(dir, 'admin.sock');
  const port = await freePort();
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
      `  bind 127.0.0.1:${port} ssl crt ${defaultPem} crt-list ${crtList} ssl-min-ver TLSv1.2`,
      '  http-request return status 200 content-type text/plain string ok',
      '',
    ].join('\n'),
  );
  const child = await spawnHaproxy(['-f', join(dir, 'haproxy.cfg'), '-db'], () => runtimeAnswers(socket));
  return {
    port,
    socket,
    crtList,
    pid: child.pid,
    exited: child.exited,
    async stop() {
      await child.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A new TLS connection by SNI that must verify against `ca` alone: the certificate presented. */
export function tlsPeer(port: number, servername: string, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername, ca }, () => {
      resolve(s.getPeerX509Certificate()!);
      s.end();
    });
    s.on('error', reject);
  });
}

/** A kept-alive HTTPS connection (HTTP/1.1 on one TLS session): one request at a time; HAProxy answers `ok`. */
export async function keptAlive(port: number, servername: string, ca?: string) {
  const s = tls.connect({ host: '127.0.0.1', port, servername, ...(ca ? { ca } : { rejectUnauthorized: false }) });
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
        // closed before the whole answer (a reload's old worker closing it): a failure, not a wait
        const onClose = () => reject(new Error(`the connection was closed (answer so far: ${JSON.stringify(answer)})`));
        const onData = (c: Buffer) => {
          answer += c.toString();
          if (answer.includes('\r\n\r\n') && answer.endsWith('ok')) {
            s.off('data', onData);
            s.off('close', onClose);
            resolve(answer);
          }
        };
        s.on('data', onData);
        s.once('error', reject);
        s.once('close', onClose);
        if (closed) onClose();
        else s.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\n\r\n`);
      });
    },
    end: () => s.end(),
  };
}

interface HaproxyChild {
  pid: number;
  output(): string;
  exited(): boolean;
  /** SIGTERM, resolved once it exited. */
  stop(): Promise<void>;
}

/**
 * Whether HAProxy's runtime API answers on `socket`. Not the socket file's existence: HAProxy binds it while it
 * reads its configuration and listens only once it starts, and a command in between is refused (ECONNREFUSED, seen
 * in a loaded run). The edge waits the same way (edge/haproxy/process.ts).
 */
export const runtimeAnswers = (socket: string): Promise<boolean> =>
  existsSync(socket)
    ? runtimeCommand(socket, 'show info', { timeoutMs: 1000 }).then(
        (info) => info.includes('Pid:'),
        () => false,
      )
    : Promise.resolve(false);

/** HAProxy in the foreground with `args`, once `ready()` holds; its output is in the error when it does not start. */
export async function spawnHaproxy(args: string[], ready: () => boolean | Promise<boolean>): Promise<HaproxyChild> {
  let output = '';
  const child = spawn('haproxy', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (c) => (output += c));
  child.stderr?.on('data', (c) => (output += c));
  const deadline = Date.now() + 20_000;
  while (!(await ready())) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`haproxy did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    pid: child.pid ?? 0,
    output: () => output,
    exited: () => child.exitCode !== null,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
