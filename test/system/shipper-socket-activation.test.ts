/**
 * The request log's shipper under systemd's socket activation (deploy/systemd/vc-console-shipper.socket): systemd
 * holds the socket HAProxy's ring connects to, so that HAProxy rests while the shipper is away (it reconnects with
 * no pause to a socket no one listens on). Tried with systemd's own launcher, `systemd-socket-activate`, which
 * listens, then runs the shipper with the socket as fd 3 (`LISTEN_FDS`, `LISTEN_PID`) once HAProxy connects: the
 * shipper reads from that socket, never binds one of its own, and its lines reach the machine file. Run alone, it
 * listens itself and warns that HAProxy spins while it is down.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import net from 'node:net';
import { dirname } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { requestLogPaths } from '../../edge/request-log/control';
import { machineFile } from '../../logs/machine-files';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser } from '../helpers/fixtures';
import { childReport, processesMentioning, spawnSystemProcess, stopChildren } from '../helpers/processes';
import { until } from '../helpers/until';

const t = useTestContext({ host: false });
let launcher: ChildProcess | undefined;

afterAll(async () => {
  if (launcher) await stopChildren([launcher]);
});

/** A line as HAProxy's log-format writes it (edge/request-log/haproxy.ts LOG_FORMAT). */
function haproxyLine(q: number, envId: string, path: string): string {
  const now = Date.now();
  const seconds = `${Math.floor(now / 1000)}.${String(now % 1000).padStart(3, '0')}`;
  const json = `{"environment_id":"${envId}","type":"request","method":"GET","path":"${path}","status":200,"bytes":12,"duration_ms":1,"client_address":"127.0.0.1","user_agent":"activation-test"}`;
  return `${q} 4242-${now}000-1 ${seconds} 1 ${json}\n`;
}

describe('the shipper under systemd socket activation', () => {
  it('run alone, listens itself and warns that HAProxy spins while it is down', async () => {
    const socket = requestLogPaths(t.dataDir).socket;
    const alone = spawnSystemProcess(t, 'processes/shipper.ts');
    try {
      const report = await until(
        'the warning of a shipper that listens itself',
        () => childReport(alone),
        (text) => text.includes('spins a core'),
        { timeoutMs: 60_000 },
      );
      expect(report).toContain('Run it under npm start or systemd');
      expect(report).toContain(socket);
      // it listens: a connection is taken
      await until('its socket', () => existsSync(socket), { timeoutMs: 20_000 });
      const probe = net.connect(socket);
      await new Promise<void>((resolve, reject) => probe.once('connect', resolve).once('error', reject));
      probe.destroy();
    } finally {
      await stopChildren([alone]);
    }
  }, 120_000);

  it('reads from the socket systemd gives it (fd 3) and binds none of its own', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const project = await createProject(t, team);
    const env = await createEnvironment(t, project, { name: 'production' });
    const socket = requestLogPaths(t.dataDir).socket;
    mkdirSync(dirname(socket), { recursive: true, mode: 0o700 });
    launcher = spawnSystemProcess(t, 'processes/shipper.ts', {}, ['systemd-socket-activate', '-l', socket]);
    await until('systemd-socket-activate to listen', () => existsSync(socket), { timeoutMs: 20_000 });
    const inode = statSync(socket).ino;

    // HAProxy's ring connecting: the launcher runs the shipper with the listening socket, which accepts this one
    const ring = net.connect(socket);
    ring.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => ring.once('connect', resolve).once('error', reject));
    ring.write(haproxyLine(1, env.id, '/activated/1') + haproxyLine(2, env.id, '/activated/2'));

    const file = machineFile(t.dataDir, env.id, 'requests', new Date().toISOString().slice(0, 10));
    const lines = await until(
      'both lines in the machine file',
      () => {
        const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
        const found = text.split('\n').filter((l) => l.includes('"path":"/activated/'));
        return found.length === 2 ? found : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(lines.map((l) => JSON.parse(l).path)).toEqual(['/activated/1', '/activated/2']);
    expect(JSON.parse(lines[0])).toMatchObject({ environment_id: env.id, status: 200, user_agent: 'activation-test' });

    // the process reading is the shipper, in the launcher's place, on the launcher's socket: the file is the one
    // systemd-socket-activate made (a shipper listening itself would have replaced it), and its fd 3 is a socket
    const shipper = processesMentioning(t.dataDir).find((p) => /processes\/shipper(\.ts|-[0-9a-f]{16}\.mjs)/.test(p));
    expect(shipper?.split(' ')[0]).toBe(String(launcher.pid));
    expect(statSync(socket).ino).toBe(inode);
    expect(readlinkSync(`/proc/${launcher.pid}/fd/3`)).toMatch(/^socket:/);
    // the socket outlives it: no warning
    expect(childReport(launcher)).not.toContain('spins a core');
    ring.destroy();
  }, 120_000);
});
