/**
 * The request log shipper's side of HAProxy's ring (docs/edge-password-and-logs.md): a unix stream socket that
 * HAProxy's ring `vc_requests` forwards to (edge/request-log/haproxy.ts), one line per request, handed to the
 * shipper's LogShipper as CONTRACT's line, already JSON (machine files and the project's destination). It runs in
 * the shipper process (processes/shipper.ts), never in the edge's control plane.
 *
 * HAProxy writes `<q> <e> <seconds.ms> <user-agent count> {"environment_id":"...",...}`: the JSON is CONTRACT's
 * line but its time, written by HAProxy with its strings escaped (`json(utf8s)`). The reader reads no JSON: it
 * takes the fields of the prefix and the environment id at its fixed place, puts the time in front (ISO, the
 * second's text made once per second) and passes the text on as it is. Only a line with a negative number (a
 * status or a time HAProxy could not give), an empty field (HAProxy writes `-`) or no User-Agent header (null,
 * not `-`) is parsed and written again with CONTRACT's defaults.
 *
 * Every line carries a sequence number per environment and HAProxy process (`q`, with the process's epoch
 * `e`). The reader keeps the highest number seen per epoch and environment, in memory and in `cursorFile`
 * (written at most once a second), so that:
 * - a line seen before is not shipped twice (the ring sends again what was not acknowledged on a reconnect);
 * - a line without a number (`0` or `-`: a failed password attempt, whose sticky counter is the password's) is
 *   shipped as it is;
 * - a number skipped is a line lost (the ring overflowed while the shipper was down, or it was cut):
 *   counted in the shipper's `dropped` line of that environment. Two HAProxy threads may write their lines in
 *   the other order, so a gap is counted once it has stayed open `reorderMs`; a gap over 1000 at once.
 * - a number 1 in a known epoch starts the environment again (its counter expired in HAProxy after 7 idle
 *   days).
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { dirname } from 'node:path';
import { ENV_AT, ENV_END, ENV_PREFIX, NO_AGENT, NULL_AGENT, repaired, unslashed, UUID } from './request-line';

/** How long the socket rests after a small read (ms), and what counts as small (characters). */
const READ_EVERY_MS = 50;
const BATCH_BYTES = 32_768;
/** How many epochs (HAProxy processes: a reload's old one still writes a while) the reader keeps at hand. */
const RECENT = 8;

/**
 * The longest line HAProxy writes (its ring's `maxlen`, and the log's `len`: HAProxy cuts a longer one). HAProxy's
 * ring forwarder sends a line from one buffer (16 KiB, edge/haproxy/buffer.ts), so it stays below that. The line
 * fits well within: its method is at most 64 bytes, its path 2048 and its user agent 512, and an escape takes at
 * most 3 characters a byte there (HAProxy's parser refuses control characters other than a tab; a code point
 * above U+00FF is `\uXXXX` for its 2 or 3 bytes): ~8,100 characters with the rest of the line.
 */
export const MAX_LINE = 14_336;

interface LineSink {
  /**
   * `lines` CONTRACT lines of `envId` as one block of JSON texts, each its time first (`{"time":"<ISO>",...`) and
   * ended by a newline (logs/queue.ts), and their UTC day (`YYYY-MM-DD`) when known: a socket read's lines of one
   * environment and day, as UTF-8.
   */
  pushBlock(envId: string, block: Buffer, lines: number, day?: string): void;
  countDropped(envId: string, n: number): void;
}

interface RequestLogReaderOptions {
  /**
   * The unix socket it listens on; none when its process is handed HAProxy's connections instead (`adopt`: under
   * `npm start`, the supervisor holds the socket, processes/request-log-socket.ts).
   */
  socketPath?: string;
  /** A listening socket it was given instead (systemd's socket activation: fd 3), kept by whoever gave it. */
  listenFd?: number;
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

const FORGET_MS = 8 * 86_400_000;

export class RequestLogReader {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  /** epoch -> environment -> cursor */
  private cursors = new Map<string, Map<string, Cursor>>();
  private dirty = false;
  private timer: NodeJS.Timeout | null = null;
  /** the last second's `seconds` text and its ISO text up to the dot (`YYYY-MM-DDTHH:MM:SS.`) */
  private second = '';
  /** the environment id of the last line (checked once while lines of one environment follow) */
  private lastEnv = '';
  /** the last epochs seen for `lastEnv`, and its cursor in each (at most RECENT) */
  private recent: Array<{ epoch: string; cursor: Cursor }> = [];
  private secondIso = '';
  /** the day (YYYY-MM-DD) of `secondIso` */
  private day = '';
  /** Date.now() at the socket read being handled */
  private now = 0;
  /** the block being made of the read's lines: their environment and day, the lines (each with its newline) */
  private blockEnv = '';
  private blockDay: string | undefined = undefined;
  private block: string[] = [];
  /** counters for tests and the operator */
  readonly counts = { lines: 0, duplicates: 0, dropped: 0, unreadable: 0, connections: 0 };
  private readonly reorderMs: number;
  private closed = false;

  constructor(private readonly o: RequestLogReaderOptions) {
    this.reorderMs = o.reorderMs ?? 2000;
  }

  async start(): Promise<this> {
    this.load();
    const path = this.o.socketPath;
    if (path) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      rmSync(path, { force: true });
    }
    const on = path ?? (this.o.listenFd !== undefined ? { fd: this.o.listenFd } : null);
    if (on !== null) {
      // a small high-water mark: a paused socket stops reading at once (readStop), so the kernel gathers the lines
      const server = net.createServer({ highWaterMark: 1024 }, (s) => this.adopt(s));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(on, resolve);
      });
      if (path) chmodSync(path, 0o600);
      this.server = server;
    }
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
    return this;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server = null;
    this.save();
  }

  /** Reads HAProxy's lines from `s`: a connection to its own socket, or one handed to its process. */
  adopt(s: net.Socket): void {
    if (this.closed) {
      s.destroy();
      return;
    }
    this.sockets.add(s);
    let rest = '';
    let resting = false;
    s.setEncoding('utf8');
    s.on('data', (chunk: string) => {
      const text = unslashed(rest ? rest + chunk : chunk);
      this.now = Date.now(); // one clock read per socket read, not per line
      let from = 0;
      let nl = text.indexOf('\n');
      while (nl >= 0) {
        if (nl > from) this.line(text, from, nl);
        from = nl + 1;
        nl = text.indexOf('\n', from);
      }
      this.endBlock();
      rest = from < text.length ? text.slice(from) : '';
      if (rest.length > MAX_LINE * 2) rest = ''; // never a line: HAProxy cuts at MAX_LINE
      // Read in batches: after a small read, the socket rests READ_EVERY_MS while the kernel (then HAProxy's
      // ring) gathers lines, so that a read brings many lines instead of one (a read costs microseconds; at a
      // line per read that was most of the shipper's CPU per line). A large read goes on at once.
      if (chunk.length < BATCH_BYTES && !resting) {
        resting = true;
        s.pause();
        setTimeout(() => {
          resting = false;
          s.resume();
        }, READ_EVERY_MS).unref();
      }
    });
    s.on('error', () => undefined);
    s.on('close', () => this.sockets.delete(s));
  }

  /**
   * The ISO time of HAProxy's `seconds.ms` at text[from, to) (the second's text kept: lines come in order), and
   * `this.day` its day.
   */
  private iso(text: string, from: number, to: number): string | null {
    const dot = to - 4;
    if (dot <= from || text.charCodeAt(dot) !== 46) return null;
    if (dot - from !== this.second.length || !text.startsWith(this.second, from)) {
      const sec = text.slice(from, dot);
      const when = Number(sec) * 1000;
      if (!Number.isFinite(when)) return null;
      this.second = sec;
      this.secondIso = new Date(when).toISOString().slice(0, 20);
      this.day = this.secondIso.slice(0, 10);
    }
    return `${this.secondIso}${text.slice(dot + 1, to)}Z`;
  }

  /** The line at text[from, to): read in place (a chunk of many lines is never cut into lines first). */
  private line(text: string, from: number, to: number): void {
    const a = text.indexOf(' ', from);
    const b = a < 0 || a >= to ? -1 : text.indexOf(' ', a + 1);
    const c = b < 0 || b >= to ? -1 : text.indexOf(' ', b + 1);
    const d = c < 0 || c >= to ? -1 : text.indexOf(' ', c + 1);
    // HAProxy's own line about a connection that never sent a request (a TLS handshake given up, a probe):
    // not a request, so not a request line, and nothing to warn about
    if (d < 0 || d >= to || !text.startsWith(ENV_PREFIX, d + 1)) {
      this.counts.connections += 1;
      return;
    }
    const j = d + 1; // where the JSON starts
    // not an environment's request (the edge's own port with an unknown Host)
    if (j + ENV_END >= to || text.charCodeAt(j + ENV_END) !== 34) return;
    // the environment: the last line's (compared in place), else read and checked
    let envId = this.lastEnv;
    if (!text.startsWith(envId, j + ENV_AT) || envId === '') {
      envId = text.slice(j + ENV_AT, j + ENV_END);
      if (!UUID.test(envId)) return;
      this.lastEnv = envId;
      this.recent = [];
    }
    const time = this.iso(text, b + 1, c);
    // the user agent count is `0` (no header): one character
    const noAgent = d === c + 2 && text.charCodeAt(c + 1) === 48;
    let out: string;
    // no User-Agent header: HAProxy wrote `-` for the last field, which is null (no parse for it)
    let end = to;
    let tail = '';
    if (noAgent && text.endsWith(NO_AGENT, to)) {
      end = to - NO_AGENT.length;
      tail = NULL_AGENT;
    }
    // a field HAProxy could not fill holds `-`: only a line with a `-` after its environment id (one memchr) is
    // searched for one
    const dash = text.indexOf('-', j + ENV_END);
    const json = dash >= 0 && dash < end ? text.slice(j, end) : '';
    if ((noAgent && !tail) || (json && (json.includes('":-') || json.includes('":"-"')))) {
      const fixed = repaired(`${text.slice(j, end)}${tail}`, noAgent ? 0 : 1);
      if (fixed === null || time === null) {
        this.counts.unreadable += 1;
        this.o.logger?.warn({ length: to - from }, 'an unreadable request log line');
        return;
      }
      out = `{"time":"${time}",${fixed.slice(1)}`;
    } else out = `{"time":"${time ?? new Date().toISOString()}",${text.slice(j + 1, end)}${tail}`;
    const day = time === null ? undefined : this.day;

    // the sequence number, read in place
    let q = 0;
    for (let i = from; i < a; i++) {
      const digit = text.charCodeAt(i) - 48;
      if (digit < 0 || digit > 9) {
        q = -1;
        break;
      }
      q = q * 10 + digit;
    }
    if (q < 1 || a === from) return void this.toBlock(envId, out, day);
    // the epoch's cursor of this environment: one of the last lines' (the old and the new process's lines
    // interleave for a moment after a reload), compared in place, else looked up
    let cur: Cursor | null = null;
    const recent = this.recent;
    for (let i = 0; i < recent.length; i++) {
      const r = recent[i];
      if (b - a - 1 === r.epoch.length && text.startsWith(r.epoch, a + 1)) {
        cur = r.cursor;
        break;
      }
    }
    if (cur === null) {
      const epoch = text.slice(a + 1, b);
      let envs = this.cursors.get(epoch);
      if (!envs) this.cursors.set(epoch, (envs = new Map()));
      cur = envs.get(envId) ?? null;
      if (!cur) envs.set(envId, (cur = { q: 0, at: this.now }));
      if (recent.length >= RECENT) recent.shift();
      recent.push({ epoch, cursor: cur });
    }
    this.dirty = true;
    cur.at = this.now;
    if (q > cur.q) {
      const gap = q - cur.q - 1;
      if (gap > 1000) this.drop(envId, gap);
      else if (gap > 0) {
        cur.holes ??= new Map();
        for (let i = cur.q + 1; i < q; i++) cur.holes.set(i, this.now);
      }
      cur.q = q;
    } else if (cur.holes?.delete(q)) {
      // a line written out of order by another thread
    } else if (q === 1) {
      cur.q = 1; // the environment's counter started again
      delete cur.holes;
    } else {
      this.counts.duplicates += 1;
      return;
    }
    this.counts.lines += 1;
    this.toBlock(envId, out, day);
  }

  /** A line (no newline) into the read's block: a new block when its environment or day is another. */
  private toBlock(envId: string, line: string, day: string | undefined): void {
    if (envId !== this.blockEnv || day !== this.blockDay) {
      this.endBlock();
      this.blockEnv = envId;
      this.blockDay = day;
    }
    this.block.push(line);
  }

  /** The block made so far, to the sink: UTF-8, encoded once (its last newline from the trailing ''). */
  private endBlock(): void {
    const lines = this.block.length;
    if (lines === 0) return;
    this.block.push('');
    const block = Buffer.from(this.block.join('\n'));
    this.block = [];
    this.o.sink.pushBlock(this.blockEnv, block, lines, this.blockDay);
  }

  private drop(envId: string, n: number): void {
    this.counts.dropped += n;
    this.o.sink.countDropped(envId, n);
  }

  /** Gaps that stayed open are lines lost; old epochs are forgotten; the cursor is saved. */
  private tick(): void {
    const now = Date.now();
    this.recent = []; // a cursor may be forgotten below
    for (const [epoch, envs] of this.cursors) {
      for (const [envId, c] of envs) {
        if (now - c.at > FORGET_MS) {
          envs.delete(envId);
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
        if (lost) this.drop(envId, lost);
        if (c.holes.size === 0) delete c.holes;
      }
      if (envs.size === 0) this.cursors.delete(epoch);
    }
    this.save();
  }

  private load(): void {
    this.cursors = new Map();
    try {
      const saved = JSON.parse(readFileSync(this.o.cursorFile, 'utf8')) as Record<string, { q: number; at: number }>;
      for (const [key, v] of Object.entries(saved)) {
        const bar = key.indexOf('|');
        const epoch = key.slice(0, bar);
        let envs = this.cursors.get(epoch);
        if (!envs) this.cursors.set(epoch, (envs = new Map()));
        envs.set(key.slice(bar + 1), { q: v.q, at: v.at });
      }
    } catch {
      this.cursors = new Map();
    }
  }

  private save(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const out: Record<string, { q: number; at: number }> = {};
    for (const [epoch, envs] of this.cursors)
      for (const [envId, c] of envs) out[`${epoch}|${envId}`] = { q: c.q, at: c.at };
    mkdirSync(dirname(this.o.cursorFile), { recursive: true, mode: 0o700 });
    const tmp = `${this.o.cursorFile}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(out), { mode: 0o600 });
    renameSync(tmp, this.o.cursorFile);
  }
}
