/**
 * The control plane's side of the request log (docs/edge-password-and-logs.md): a unix stream socket that
 * HAProxy's ring `vc_requests` forwards to (haproxy.ts), one JSON line per request, turned into CONTRACT's
 * line and pushed to the edge's LogShipper (machine files and the project's destination).
 *
 * Every line carries a sequence number per environment and HAProxy process (`q`, with the process's epoch
 * `e`). The reader keeps the highest number seen per epoch and environment, in memory and in `cursorFile`
 * (written at most once a second), so that:
 * - a line seen before is not shipped twice (the ring sends again what was not acknowledged on a reconnect);
 * - a number skipped is a line lost (the ring overflowed while the control plane was down, or it was cut):
 *   counted in the shipper's `dropped` line of that environment. Two HAProxy threads may write their lines in
 *   the other order, so a gap is counted once it has stayed open `reorderMs`; a gap over 1000 at once.
 * - a number 1 in a known epoch starts the environment again (its counter expired in HAProxy after 7 idle
 *   days).
 */
import { mkdirSync, readFileSync, renameSync, rmSync, chmodSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { dirname } from 'node:path';
import type { LogLine } from '../../logs/send';
import { MAX_LINE } from './haproxy';

export interface LineSink {
  push(line: LogLine): void;
  countDropped(envId: string, n: number): void;
}

export interface RequestLogReaderOptions {
  socketPath: string;
  /** Where the highest sequence numbers are kept across restarts. */
  cursorFile: string;
  sink: LineSink;
  reorderMs?: number;
  logger?: { warn(obj: unknown, msg?: string): void };
}

interface Cursor {
  /** highest sequence number seen */
  q: number;
  /** last time a line came (ms), to forget old epochs */
  at: number;
  /** numbers below `q` not seen yet -> when the gap opened */
  holes?: Map<number, number>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FORGET_MS = 8 * 86_400_000;

/** HAProxy's raw line -> CONTRACT's request line (null: not an environment's request, or unreadable). */
export function toLogLine(raw: Record<string, unknown>): LogLine | null {
  const env = String(raw.env ?? '');
  if (!UUID.test(env)) return null;
  const [sec, ms] = String(raw.t ?? '').split('.');
  const when = Number(sec) * 1000 + Number(ms ?? 0);
  const status = Number(raw.s);
  const text = (v: unknown) => (typeof v === 'string' && v !== '-' ? v : null);
  return {
    time: new Date(Number.isFinite(when) ? when : Date.now()).toISOString(),
    environment_id: env,
    type: 'request',
    method: text(raw.m) ?? 'GET',
    path: text(raw.p) ?? '/',
    status: Number.isFinite(status) && status > 0 ? status : 499,
    bytes: Math.max(0, Number(raw.b) || 0),
    duration_ms: Math.max(0, Number(raw.d) || 0),
    client_address: text(raw.a),
    user_agent: Number(raw.un) > 0 ? String(raw.u ?? '') : null,
  };
}

export class RequestLogReader {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  private cursors = new Map<string, Cursor>();
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  /** counters for tests and the operator */
  readonly counts = { lines: 0, duplicates: 0, dropped: 0, unreadable: 0, connections: 0 };
  private readonly reorderMs: number;

  constructor(private readonly o: RequestLogReaderOptions) {
    this.reorderMs = o.reorderMs ?? 2000;
  }

  async start(): Promise<this> {
    this.load();
    mkdirSync(dirname(this.o.socketPath), { recursive: true, mode: 0o700 });
    rmSync(this.o.socketPath, { force: true });
    const server = net.createServer((s) => this.accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.socketPath, resolve);
    });
    chmodSync(this.o.socketPath, 0o600);
    this.server = server;
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
    return this;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server = null;
    this.save();
  }

  private accept(s: net.Socket): void {
    this.sockets.add(s);
    let buffer = '';
    s.setEncoding('utf8');
    s.on('data', (chunk: string) => {
      buffer += chunk;
      let nl = buffer.indexOf('\n');
      while (nl >= 0) {
        this.line(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf('\n');
      }
      if (buffer.length > MAX_LINE * 2) buffer = ''; // never a line: HAProxy cuts at MAX_LINE
    });
    s.on('error', () => undefined);
    s.on('close', () => this.sockets.delete(s));
  }

  private line(text: string): void {
    if (!text.trim()) return;
    // HAProxy's own line about a connection that never sent a request (a TLS handshake given up, a probe):
    // not a request, so not a request line, and nothing to warn about
    if (!text.trimStart().startsWith('{')) {
      this.counts.connections += 1;
      return;
    }
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(text);
    } catch {
      this.counts.unreadable += 1;
      this.o.logger?.warn({ length: text.length }, 'an unreadable request log line');
      return;
    }
    const line = toLogLine(raw);
    if (!line) return;
    const envId = line.environment_id!;
    const q = Number(raw.q);
    if (!Number.isInteger(q) || q < 1) return void this.o.sink.push(line);
    const key = `${String(raw.e)}|${envId}`;
    const now = Date.now();
    let c = this.cursors.get(key);
    if (!c) this.cursors.set(key, (c = { q: 0, at: now }));
    this.dirty = true;
    c.at = now;
    if (q > c.q) {
      const gap = q - c.q - 1;
      if (gap > 1000) this.drop(envId, gap);
      else if (gap > 0) {
        c.holes ??= new Map();
        for (let i = c.q + 1; i < q; i++) c.holes.set(i, now);
      }
      c.q = q;
    } else if (c.holes?.delete(q)) {
      // a line written out of order by another thread
    } else if (q === 1) {
      c.q = 1; // the environment's counter started again
      delete c.holes;
    } else {
      this.counts.duplicates += 1;
      return;
    }
    this.counts.lines += 1;
    this.o.sink.push(line);
  }

  private drop(envId: string, n: number): void {
    this.counts.dropped += n;
    this.o.sink.countDropped(envId, n);
  }

  /** Gaps that stayed open are lines lost; old epochs are forgotten; the cursor is saved. */
  private tick(): void {
    const now = Date.now();
    for (const [key, c] of this.cursors) {
      if (now - c.at > FORGET_MS) {
        this.cursors.delete(key);
        this.dirty = true;
        continue;
      }
      if (!c.holes) continue;
      let lost = 0;
      for (const [q, at] of c.holes)
        if (now - at >= this.reorderMs) {
          c.holes.delete(q);
          lost += 1;
        }
      if (lost) this.drop(key.slice(key.indexOf('|') + 1), lost);
      if (c.holes.size === 0) delete c.holes;
    }
    this.save();
  }

  private load(): void {
    try {
      const saved = JSON.parse(readFileSync(this.o.cursorFile, 'utf8')) as Record<string, { q: number; at: number }>;
      this.cursors = new Map(Object.entries(saved).map(([k, v]) => [k, { q: v.q, at: v.at }]));
    } catch {
      this.cursors = new Map();
    }
  }

  private save(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const out: Record<string, { q: number; at: number }> = {};
    for (const [k, c] of this.cursors) out[k] = { q: c.q, at: c.at };
    mkdirSync(dirname(this.o.cursorFile), { recursive: true, mode: 0o700 });
    const tmp = `${this.o.cursorFile}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(out), { mode: 0o600 });
    renameSync(tmp, this.o.cursorFile);
  }
}
