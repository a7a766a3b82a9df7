/**
 * The production shapes shipped in the repository, checked for their facts without an engine:
 * docker-compose.yml (parsed with `yaml`) and the systemd units of deploy/systemd (systemd-analyze verify).
 */
import { requestLogPaths } from '../../edge/request-log/control';
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
/** A service of the compose file, as far as the tests read it. */
interface ComposeService {
  restart?: string;
  user?: string;
  cap_add: string[];
  cap_drop?: string[];
  security_opt: string[];
  privileged?: boolean;
  volumes?: string[];
  ports?: string[];
  network_mode?: string;
  command: string[];
  [key: string]: unknown;
}
const services = compose.services as Record<string, ComposeService>;

describe('docker-compose.yml', () => {
  it('has no top-level name (Debian’s docker-compose 1.29 rejects it)', () => {
    expect(Object.keys(compose).sort()).toEqual([
      'services',
      'volumes',
      'x-app-build',
      'x-app-environment',
      'x-temporal-db-environment',
    ]);
  });

  it('gives every service a restart policy', () => {
    const without = Object.entries(services).filter(([, s]) => !s.restart || s.restart === 'no');
    expect(without.map(([name]) => name)).toEqual([]);
  });

  it('runs the worker as root with exactly SYS_ADMIN and NET_ADMIN added, AppArmor unconfined, /proc/sys writable', () => {
    const worker = services.worker;
    expect(worker.user).toBe('0:0');
    expect([...worker.cap_add].sort()).toEqual(['NET_ADMIN', 'SYS_ADMIN']);
    expect(worker.cap_drop ?? []).toEqual([]);
    expect([...worker.security_opt].sort()).toEqual(['apparmor=unconfined', 'systempaths=unconfined']);
    expect(worker.privileged ?? false).toBe(false);
    expect(worker.volumes).toContain('/sys/fs/cgroup:/sys/fs/cgroup:rw');
    expect(worker.ports).toBeUndefined(); // it serves no port: the edge does
    expect(worker.network_mode).toBe('service:network');
  });

  it('has an edge in the network namespace that publishes the environments’ ports and EDGE_PORT', () => {
    expect(services.edge.command.join(' ')).toContain('processes/edge.ts');
    expect(services.edge.network_mode).toBe('service:network');
    expect(services.network.ports).toEqual([
      `\${ENVIRONMENT_PORTS:-20000-20099}:\${ENVIRONMENT_PORTS:-20000-20099}`,
      `\${EDGE_PORT:-8000}:\${EDGE_PORT:-8000}`,
    ]);
    expect(compose['x-app-environment'].EDGE_PORT).toBe(`\${EDGE_PORT:-8000}`);
    expect(compose['x-app-environment'].ENCRYPTION_KEY).toMatch(/^\$\{ENCRYPTION_KEY:\?/);
  });

  it('builds an image with the sandbox tools', () => {
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    for (const pkg of ['bubblewrap', 'nftables', 'iproute2', 'procps'])
      expect(dockerfile).toMatch(new RegExp(`\\b${pkg}\\b`));
  });
});

describe('deploy/systemd', () => {
  const dir = path.join(root, 'deploy', 'systemd');
  const units = readdirSync(dir).filter((f) => f.endsWith('.service'));

  it('has one unit per process, each restarted on failure', () => {
    expect(units.sort()).toEqual([
      'vc-console-api.service',
      'vc-console-edge.service',
      'vc-console-migrate.service',
      'vc-console-shipper.service',
      'vc-console-temporal.service',
      'vc-console-worker.service',
    ]);
    for (const unit of units) expect(readFileSync(path.join(dir, unit), 'utf8')).toMatch(/^Restart=on-failure$/m);
    // the worker's crash leaves its tenants' processes running
    expect(readFileSync(path.join(dir, 'vc-console-worker.service'), 'utf8')).toMatch(/^KillMode=process$/m);
  });

  it("holds the request log's socket in a socket unit, at the path the edge gives HAProxy for DATA_DIR", () => {
    const socket = readFileSync(path.join(dir, 'vc-console-shipper.socket'), 'utf8');
    // the DATA_DIR of the units (the Temporal dev server's database is under it too)
    expect(readFileSync(path.join(dir, 'vc-console-temporal.service'), 'utf8')).toContain(
      '/var/lib/vc-console/temporal',
    );
    expect(socket).toMatch(new RegExp(`^ListenStream=${requestLogPaths('/var/lib/vc-console').socket}$`, 'm'));
    expect(socket).toMatch(/^Service=vc-console-shipper\.service$/m);
    const service = readFileSync(path.join(dir, 'vc-console-shipper.service'), 'utf8');
    expect(service).toMatch(/^Requires=.*\bvc-console-shipper\.socket\b/m);
    expect(readFileSync(path.join(dir, 'vc-console.target'), 'utf8')).toContain('vc-console-shipper.socket');
  });

  it('passes systemd-analyze verify without a warning', () => {
    execFileSync('sh', ['-c', 'command -v systemd-analyze']); // installed by scripts/bootstrap.mjs for the tests
    const r = spawnSync('systemd-analyze', ['verify', ...units, 'vc-console-shipper.socket', 'vc-console.target'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
  });
});
