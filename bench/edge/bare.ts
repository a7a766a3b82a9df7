/**
 * The edge bench's baseline (bench/edge.ts): a bare HAProxy in front of the same app, in the same run. The same
 * HAProxy binary and threads (EDGE_THREADS as the edge takes it: one less than the cores by default), keep-alive
 * both ways, no rule, no log, no map: what proxying a request costs here at all.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HAPROXY_BIN } from '../../edge/haproxy/process';
import { edgeThreads } from '../../system/config';
import { freePort } from '../../test/helpers/ports';

interface BareHaproxy {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

export async function startBareHaproxy(dir: string, appPort: number): Promise<BareHaproxy> {
  const port = await freePort();
  const file = join(dir, 'bare-haproxy.cfg');
  writeFileSync(
    file,
    [
      'global',
      '  maxconn 4000',
      `  nbthread ${edgeThreads(process.env)}`,
      'defaults',
      '  mode http',
      '  option http-keep-alive',
      '  timeout connect 5s',
      '  timeout client 60s',
      '  timeout server 60s',
      'frontend bare',
      `  bind 127.0.0.1:${port}`,
      '  default_backend app',
      'backend app',
      `  server app 127.0.0.1:${appPort}`,
      '',
    ].join('\n'),
  );
  const child = spawn(HAPROXY_BIN, ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`the bare HAProxy exited (${child.exitCode})`);
    const ok = await fetch(`http://127.0.0.1:${port}/`).then(
      (r) => r.arrayBuffer().then(() => r.ok),
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    },
  };
}
