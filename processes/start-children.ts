/**
 * The console's own processes as `npm start` supervises them (processes/supervision.ts): the request log's
 * shipper, the edge, the worker and the API, each `node processes/<name>.ts`'s bundle (process-bundles.ts; else the
 * TypeScript through tsx) with the same environment, and how each says it is ready. The edge's spec is generic on purpose: whatever runs the edge, it is ready once EDGE_PORT accepts
 * connections.
 */
import net from 'node:net';
import type { Knex } from 'knex';
import { WorkerHeartbeat } from '../db/models/worker-heartbeat';
import type { Config } from '../system/config';
import type { ChildSpec } from './supervision';
import { workerIdentity } from '../core/worker-readiness';
import { HANDED_ENV, type RequestLogSocket } from './request-log-socket';
import { givenProcessBundles, nodeArgs } from './process-bundles';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const local = (host: string) => (['0.0.0.0', '::', ''].includes(host) ? '127.0.0.1' : host);

export function consoleChildren(o: {
  root: string;
  env: NodeJS.ProcessEnv;
  config: Config;
  knex: Knex;
}): Record<'edge' | 'worker' | 'api', ChildSpec> {
  const node = nodeChild(o);
  let apiProbe: string | null = null;
  return {
    // Serves the environments' ports and EDGE_PORT from PostgreSQL alone: tenants stay served while the
    // worker or the API is away.
    edge: {
      name: 'edge',
      ...node('processes/edge.ts'),
      ready: () => untilConnects({ host: local(o.config.environmentBind), port: o.config.edgePort }),
      stopTimeoutMs: 15_000,
    },
    // Runs the tasks and owns the tenants' web processes; ready once it has written its readiness row
    // (environments restored, schedules ensured). Its stop stops the tenants' processes first.
    worker: {
      name: 'worker',
      ...node('processes/worker.ts'),
      ready: async (pid) => {
        for (;;) {
          const row = await WorkerHeartbeat.query(o.knex)
            .findById(workerIdentity(pid))
            .catch(() => undefined);
          if (row) return;
          await pause(300);
        }
      },
      readyTimeoutMs: 300_000,
      stopTimeoutMs: 45_000,
    },
    // On the same PORT at every start.
    api: {
      name: 'api',
      ...node('processes/api.ts'),
      ready: async () => {
        const url = `http://${local(o.config.host)}:${o.config.port}/api/vc/v1/health`;
        for (;;) {
          const began = Date.now();
          const ok = await fetch(url, { signal: AbortSignal.timeout(5000) }).then(
            () => true,
            (err: Error) => {
              const cause = (err.cause as Error | undefined)?.message ?? err.message;
              apiProbe = `its last probe of ${url}: ${cause} after ${Date.now() - began} ms`;
              return false;
            },
          );
          if (ok) return;
          await pause(300);
        }
      },
      notReadyDetail: () => apiProbe,
      stopTimeoutMs: 15_000,
    },
  };
}

/**
 * The request log's shipper (processes/shipper-runtime.ts): reads HAProxy's ring through the connections the
 * supervisor hands it (an IPC channel; `requestLog`, the socket the supervisor holds), writes the machine files,
 * sends to the projects' destinations. Ready once it says so on that channel.
 */
export function shipperChild(o: { root: string; env: NodeJS.ProcessEnv; requestLog: RequestLogSocket }): ChildSpec {
  return {
    name: 'shipper',
    ...nodeChild({ ...o, env: { ...o.env, [HANDED_ENV]: 'handed' } })('processes/shipper.ts'),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    spawned: (child) => o.requestLog.adopt(child),
    ready: (pid) => o.requestLog.ready(pid),
    stopTimeoutMs: 15_000,
  };
}

function nodeChild(o: { root: string; env: NodeJS.ProcessEnv }) {
  return (script: string) => ({
    command: process.execPath,
    args: nodeArgs(o.root, script, givenProcessBundles(o.env)),
    cwd: o.root,
    env: o.env,
  });
}

async function untilConnects(to: { host: string; port: number }): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(to);
      s.setTimeout(2000, () => {
        s.destroy();
        resolve(false);
      });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await pause(200);
  }
}
