/**
 * The wiring contract between HAProxy and the CDN tier, as a real HAProxy 2.6 (for tests and the bench):
 * each environment's front sends GET/HEAD to Varnish with `X-VC-Env` and `X-VC-Default-TTL` set (a
 * client's own values dropped), Host kept; other requests go straight to the app. Varnish's one backend
 * is the internal origin listener, which routes by `X-VC-Env` (a map) to the environment's instances
 * without the rules again; the instances' backend drops the X-VC-* headers. The edge's own rules (which
 * the real configuration applies first) are left out.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnHaproxy } from './haproxy';

interface CdnHaproxyEnv {
  id: string;
  /** The environment's port (HAProxy binds it). */
  port: number;
  /** Its instance. */
  appPort: number;
  defaultTtl: number;
}

function cdnHaproxyConfig(o: { envs: CdnHaproxyEnv[]; cdnPort: number; originPort: number; map: string }) {
  const lines = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout client 30s',
    '  timeout server 30s',
    '  timeout connect 5s',
    '  timeout http-keep-alive 30s',
    '',
  ];
  for (const e of o.envs)
    lines.push(
      `frontend env_${e.id}`,
      `  bind 127.0.0.1:${e.port}`,
      '  option forwardfor',
      '  http-request del-header X-VC-Env',
      '  http-request del-header X-VC-Default-TTL',
      '  # ... every rule of the edge comes first ...',
      '  acl vc_cdn method GET HEAD',
      '  acl vc_upgrade req.hdr(upgrade) -m found',
      `  http-request set-header X-VC-Env ${e.id} if vc_cdn !vc_upgrade`,
      `  http-request set-header X-VC-Default-TTL ${e.defaultTtl} if vc_cdn !vc_upgrade`,
      '  use_backend vc_cdn if vc_cdn !vc_upgrade',
      `  default_backend env_${e.id}`,
      '',
      `backend env_${e.id}`,
      '  http-request del-header X-VC-Env',
      '  http-request del-header X-VC-Default-TTL',
      `  server app 127.0.0.1:${e.appPort}`,
      '',
    );
  lines.push(
    'backend vc_cdn',
    `  server varnish 127.0.0.1:${o.cdnPort}`,
    '',
    '# Varnish fetches its misses here: to the environment X-VC-Env names, no rules again.',
    'frontend vc_origin',
    `  bind 127.0.0.1:${o.originPort}`,
    `  use_backend %[req.hdr(x-vc-env),map(${o.map},vc_no_env)]`,
    '',
    'backend vc_no_env',
    '  http-request deny deny_status 503',
    '',
  );
  return lines.join('\n');
}

export interface CdnHaproxy {
  stop(): Promise<void>;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export async function startCdnHaproxy(o: {
  envs: CdnHaproxyEnv[];
  cdnPort: number;
  originPort: number;
}): Promise<CdnHaproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'vc-cdn-haproxy-'));
  const map = join(dir, 'envs.map');
  writeFileSync(map, o.envs.map((e) => `${e.id} env_${e.id}\n`).join(''));
  writeFileSync(join(dir, 'haproxy.cfg'), cdnHaproxyConfig({ ...o, map }));
  const child = await spawnHaproxy(['-f', join(dir, 'haproxy.cfg'), '-db'], () => listening(o.originPort));
  return {
    async stop() {
      await child.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
