/**
 * The request log's socket, held by `npm start` itself (processes/start.ts), not by the shipper process.
 *
 * HAProxy's ring `vc_requests` connects to this unix socket (edge/request-log/haproxy.ts). When nothing listens
 * there, HAProxy 2.6's ring forwarder reconnects without any pause: one failed connect after another, a whole core
 * of the edge's CPU for as long as the shipper is away (measured: ~95 % of a core, thousands of attempts a
 * second; docs/edge-password-and-logs.md). The shipper is away during every restart, and for good once
 * supervision gives up on it in a crash loop.
 *
 * So the supervisor listens, and never reads: each connection is accepted paused (`pauseOnConnect`) and handed
 * to the shipper process over its IPC channel (Node's documented socket passing), which reads it as its own. The
 * supervisor keeps its own copy of every connection until the shipper says it ended: when the shipper dies, the
 * connection stays open, HAProxy rests (it reconnects only when a connection closes), its lines wait unread in
 * the kernel's buffer and then in the ring, and the next shipper is handed the same connections once it says it is
 * ready, and reads on where the last one stopped.
 */
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { dataPlaneUser, openEdgeDir, shareSocket } from '../edge/privileges';
import { requestLogPaths } from '../edge/request-log/control';

/** Set to `handed` in the shipper's environment: its connections come from this socket, over its IPC channel. */
export const HANDED_ENV = 'VC_REQUEST_LOG_SOCKET';
/** What the shipper says on its IPC channel once it reads (processes/shipper.ts). */
export const SHIPPER_READY = 'vc-request-log-ready';
/** A connection handed to the shipper: `{type, id}` with the socket. */
export const SHIPPER_CONNECTION = 'vc-request-log-connection';
/** What the shipper says when a handed connection closed (`{type, id}`): the supervisor lets its copy go. */
export const SHIPPER_ENDED = 'vc-request-log-ended';
/** Connections kept at most (HAProxy's ring holds one; a reload's old worker another, until it has sent its lines). */
const MAX_KEPT = 32;

export interface RequestLogSocket {
  /** Give it every spawned shipper process: its connections go to it once it is ready. */
  adopt(child: ChildProcess): void;
  /** Resolves once the shipper process `pid` has said it is ready (its readiness for supervision). */
  ready(pid: number): Promise<void>;
  close(): Promise<void>;
}

const isEnded = (m: unknown): m is { type: string; id: number } =>
  typeof m === 'object' && m !== null && (m as { type?: unknown }).type === SHIPPER_ENDED;

export async function holdRequestLogSocket(dataDir: string): Promise<RequestLogSocket> {
  const path = requestLogPaths(dataDir).socket;
  openEdgeDir(dataDir);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  rmSync(path, { force: true });
  /** every connection not known to have ended, by id (the supervisor's copy: paused, never read) */
  const kept = new Map<number, net.Socket>();
  let nextId = 1;
  let shipper: ChildProcess | null = null;
  const readyPids = new Set<number>();
  const readyWaiters = new Map<number, () => void>();

  // a send that fails (the shipper went away meanwhile) is sent again to the next one
  const hand = (id: number, s: net.Socket) => {
    if (shipper?.connected) shipper.send({ type: SHIPPER_CONNECTION, id }, s, { keepOpen: true }, () => undefined);
  };

  const server = net.createServer({ pauseOnConnect: true }, (s) => {
    const id = nextId++;
    kept.set(id, s);
    s.on('error', () => undefined);
    for (const [old, o] of kept) {
      if (kept.size <= MAX_KEPT) break;
      o.destroy();
      kept.delete(old);
    }
    hand(id, s);
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  // HAProxy's workers (the data plane's user) connect to it; no one else
  shareSocket(path, dataPlaneUser(dataDir).user);

  return {
    adopt(child) {
      child.on('message', (m) => {
        if (isEnded(m)) {
          kept.get(m.id)?.destroy();
          kept.delete(m.id);
          return;
        }
        if (m !== SHIPPER_READY || !child.pid) return;
        shipper = child;
        readyPids.add(child.pid);
        readyWaiters.get(child.pid)?.();
        readyWaiters.delete(child.pid);
        for (const [id, s] of kept) hand(id, s);
      });
      child.once('exit', () => {
        if (shipper === child) shipper = null;
        if (child.pid) readyPids.delete(child.pid);
      });
    },
    ready: (pid) =>
      readyPids.has(pid) ? Promise.resolve() : new Promise<void>((r) => readyWaiters.set(pid, () => r())),
    async close() {
      for (const s of kept.values()) s.destroy();
      kept.clear();
      // not waited for: a server whose connections went to a child process calls back only once that child says it
      // closed them, and a stopped shipper never answers
      server.close();
      rmSync(path, { force: true });
    },
  };
}
