/**
 * A real OpenSSH server on loopback for repository tests: Debian's /usr/sbin/sshd (installed with
 * apt-get, as root, when missing: `apt-get install -y openssh-server`) with a config file of its own, its
 * own host key and port, public-key authentication only, and one authorized-keys file the test writes.
 * git reaches repositories through it as the running user (git-upload-pack over ssh).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';
import { killAndWait } from './processes';

const SSHD = '/usr/sbin/sshd';

/** sshd's path, installing Debian's openssh-server when missing (as root); or why there is none. */
export function ensureSshd(): { path: string } | { reason: string } {
  if (existsSync(SSHD)) return { path: SSHD };
  if (process.getuid?.() !== 0)
    return { reason: `${SSHD} is missing and installing it needs root (apt-get install -y openssh-server)` };
  if (!existsSync('/usr/bin/apt-get')) return { reason: `${SSHD} is missing and this host has no apt-get` };
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '-q', '-o', 'DPkg::Lock::Timeout=600', 'openssh-server'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  console.log(`[ssh tests] ${SSHD} is missing: installing openssh-server (apt-get install -y openssh-server)...`);
  try {
    install();
  } catch {
    try {
      execFileSync('apt-get', ['update', '-q'], { stdio: 'ignore' });
      install();
    } catch (err) {
      return { reason: `apt-get install -y openssh-server failed: ${String(err).slice(0, 300)}` };
    }
  }
  return existsSync(SSHD) ? { path: SSHD } : { reason: `openssh-server installed but ${SSHD} is missing` };
}

export interface SshServer {
  port: number;
  user: string;
  /** Replaces the authorized keys (one OpenSSH public key a line). */
  authorize(keys: string[]): void;
  /** What sshd logged (accepted or refused keys). */
  log(): string;
  stop(): Promise<void>;
}

export async function startSshd(): Promise<SshServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vc-sshd-'));
  const hostKey = path.join(dir, 'host_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  const authorized = path.join(dir, 'authorized_keys');
  writeFileSync(authorized, '', { mode: 0o600 });
  const logFile = path.join(dir, 'sshd.log');
  const port = await freePort();
  const config = path.join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${authorized}`,
      `PidFile ${path.join(dir, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      'UsePAM no',
      'AllowTcpForwarding no',
      'X11Forwarding no',
      'PrintMotd no',
      'LogLevel VERBOSE',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const child: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', config, '-E', logFile], {
    stdio: ['ignore', 'ignore', 'ignore'],
    detached: true,
  });
  await waitForPort(port, child);
  const user = os.userInfo().username;
  return {
    port,
    user,
    authorize: (keys) => writeFileSync(authorized, keys.map((k) => `${k.trim()}\n`).join(''), { mode: 0o600 }),
    log: () => {
      try {
        return execFileSync('cat', [logFile], { encoding: 'utf8' });
      } catch {
        return '';
      }
    },
    stop: async () => {
      await killAndWait(child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`sshd exited with ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('sshd did not listen within 10 s');
}
