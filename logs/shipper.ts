/**
 * The log shipper: one per process that produces log lines (the edge: request lines; the worker: the web
 * processes' error output). It never blocks the caller: `push` only appends to memory.
 *
 * Lines are kept as JSON text (CONTRACT's line, its time first) in blocks of UTF-8 (queue.ts): the request log's
 * reader hands a socket read's lines of one environment as one block (logs/request-reader.ts, never parsed), `push`
 * turns a web process's line into a block of one. A block is written to the machine file and sent as it is, never
 * copied into a larger one (writev). Every `flushMs` it
 * appends the buffered lines to the machine's own day files (machine-files.ts) and sends
 * each environment's queued lines, in batches of at most `batchMax`, to its project's destination (send.ts).
 * A batch that fails goes back to the head of its queue and is retried after a backoff (1 s doubling up to
 * `maxBackoffMs`). Memory is bounded: an environment's queue holds at most `maxQueued` lines and about
 * `maxQueuedBytes` of them (a web process's error lines are up to 16 KiB each); past that the oldest are dropped
 * and counted, and the next batch that goes through starts with a `dropped` line saying
 * how many. Destinations and keep-days come from PostgreSQL, re-read every `refreshMs` (a saved change
 * applies within that time, to lines already queued too), and at once when its process is told of a change
 * (`project_log_settings` notifies `vc_edge`, which the request log's shipper process listens on:
 * processes/shipper-runtime.ts). The lines of an environment without a destination
 * are held for two refreshes, then forgotten: a destination saved now gets the lines of the requests made
 * just after the save, before this process reads it (a new user's first try).
 *
 * Every line is written and sent with the secret variables of its environment hidden (redaction.ts), read
 * again at each flush: nothing a tenant's process printed leaves with a secret value in it.
 */
import type { Knex } from 'knex';
import type { OutboundConfig } from '../host/outbound';
import {
  loadShippingTargets,
  openDestination,
  projectsOfEnvironments,
  recordDelivery,
  type ShippingTarget,
} from '../db/queries/log-settings';
import type { Secrets } from '../system/secrets';
import { appendMachineLines, dayOf, sweep } from './machine-files';
import { describeFailure, sendBlocks, type Destination, type LogLine } from './send';
import { LineRedactor } from './redaction';
import {
  type Queue,
  dequeue,
  enqueue,
  lineText,
  newQueue,
  requeue,
  splitLines,
  blockTime,
  blockOf,
  trimQueue,
} from './queue';

export interface ShipperOptions {
  knex: Knex;
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;
  outbound: OutboundConfig;
  dataDir: string;
  /** The machine files' suffix: `requests` (edge), `errors` (web processes). */
  source: string;
  flushMs?: number;
  batchMax?: number;
  maxQueued?: number;
  /** What an environment's queue may hold, in bytes (about: each line's strings and a fixed overhead). */
  maxQueuedBytes?: number;
  refreshMs?: number;
  /** How long the lines of an environment without a destination are held (default: two refreshes). */
  holdMs?: number;
  maxBackoffMs?: number;
  logger?: { warn(obj: unknown, msg?: string): void };
}

const SWEEP_EVERY_MS = 3_600_000;
const REPORT_EVERY_MS = 30_000;

export class LogShipper {
  private targets = new Map<string, ShippingTarget>();
  private readonly queues = new Map<string, Queue>();
  /** envId -> day -> blocks of lines waiting for the machine file (queue.ts) */
  private readonly machine = new Map<string, Map<string, Buffer[]>>();
  private readonly redactor: LineRedactor;
  private readonly swept = new Map<string, { at: number; keepDays: number }>();
  private readonly reported = new Map<string, { at: number; ok: boolean }>();
  private readonly timers: NodeJS.Timeout[] = [];
  private refreshing: Promise<void> | null = null;
  private refreshWanted = false;
  private sweptAll = 0;
  private flushing: Promise<void> | null = null;
  private closed = false;
  /** The last line's environment and day, and where its lines go (forgotten when either list is let go). */
  private last: {
    envId: string;
    day: string;
    targets: Map<string, ShippingTarget>;
    machine: Buffer[];
    queue: Queue;
  } | null = null;
  readonly opts: Required<Omit<ShipperOptions, 'logger' | 'holdMs'>> & Pick<ShipperOptions, 'logger' | 'holdMs'>;

  constructor(o: ShipperOptions) {
    this.opts = {
      flushMs: 1000,
      batchMax: 500,
      maxQueued: 10_000,
      maxQueuedBytes: 8 * 1024 * 1024,
      refreshMs: 5000,
      maxBackoffMs: 30_000,
      ...o,
    };
    this.redactor = new LineRedactor(o.knex, o.secrets);
  }

  async start(): Promise<this> {
    await this.refresh().catch(() => undefined);
    const flush = setInterval(() => void this.flush(), this.opts.flushMs);
    const refresh = setInterval(() => void this.refresh().catch(() => undefined), this.opts.refreshMs);
    flush.unref();
    refresh.unref();
    this.timers.push(flush, refresh);
    return this;
  }

  /** Takes one line (its environment_id says where it belongs). Never throws, never waits. */
  push(line: LogLine): void {
    if (line.environment_id) this.pushBlock(line.environment_id, blockOf(`${lineText(line)}\n`), 1);
  }

  /**
   * Takes `lines` lines of `envId` as one block of JSON texts, each its time first (`lineText`) and ended by a
   * newline, and their UTC day when the caller knows it (the request log's reader does; else the first line's).
   * Never throws, never waits. Blocks of one environment and day come in runs (the request log): the last one's
   * machine-file list and queue are kept at hand.
   */
  pushBlock(envId: string, block: Buffer, lines: number, day?: string): void {
    if (!envId || this.closed || lines <= 0) return;
    const d = day ?? dayOf(blockTime(block));
    let last = this.last;
    if (last === null || last.envId !== envId || last.day !== d || last.targets !== this.targets) {
      let days = this.machine.get(envId);
      if (!days) this.machine.set(envId, (days = new Map()));
      let text = days.get(d);
      if (!text) days.set(d, (text = []));
      // A new environment: learn its project at the next flush. An environment without a destination keeps
      // its lines a short while too (hold): a destination saved now is known at the next refresh only.
      if (!this.targets.has(envId)) this.refreshWanted = true;
      this.last = last = { envId, day: d, targets: this.targets, machine: text, queue: this.queueOf(envId) };
    }
    last.machine.push(block);
    const q = last.queue;
    enqueue(q, block, lines);
    // A full batch goes at once, not at the next flush: a busy environment's queue then never fills between two
    // flushes (it held ~30,000 request lines, and `npm run bench -- edge` at the edge's saturating rate lost ~10 %
    // of its lines to `trim` before this). A send under way takes what came (startSending).
    if (q.lines >= this.opts.batchMax) this.startSending(envId, q, false);
    this.trim(q);
  }

  /**
   * Lines lost before they reached the shipper (the edge's request log ring overflowed while the control
   * plane was down, edge/request-log/reader.ts): sent in the environment's next `dropped` line.
   */
  countDropped(envId: string, n: number): void {
    if (!envId || n <= 0 || this.closed) return;
    const target = this.targets.get(envId);
    if (!target) this.refreshWanted = true;
    else if (!target.row?.kind) return;
    this.queueOf(envId).dropped += n;
  }

  private forgetQueue(envId: string): void {
    this.queues.delete(envId);
    if (this.last?.envId === envId) this.last = null;
  }

  private queueOf(envId: string): Queue {
    let q = this.queues.get(envId);
    if (!q) this.queues.set(envId, (q = newQueue()));
    return q;
  }

  /** Lines queued (not yet sent) for an environment, and how many were dropped. */
  queued(envId: string): { lines: number; dropped: number } {
    const q = this.queues.get(envId);
    return { lines: q?.lines ?? 0, dropped: q?.dropped ?? 0 };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.flushing?.catch(() => undefined);
    await this.loadSecrets();
    await this.writeMachineFiles().catch(() => undefined);
  }

  /**
   * No destination (as last read): lines younger than two refreshes stay, so that the lines of requests made
   * just after a destination is saved, before this process reads it, are sent once it does. Nothing of it
   * counts as dropped.
   */
  private hold(envId: string, q: Queue): void {
    // ISO times compare as text
    const since = new Date(Date.now() - (this.opts.holdMs ?? 2 * this.opts.refreshMs)).toISOString();
    // a block's lines came in one read: its first line's time is theirs
    let old = 0;
    while (old < q.blocks.length && blockTime(q.blocks[old]) < since) old++;
    if (old > 0)
      dequeue(
        q,
        q.counts.slice(0, old).reduce((a, b) => a + b, 0),
      );
    q.dropped = 0;
    if (q.lines === 0) this.forgetQueue(envId);
  }

  /** The oldest lines past `maxQueued` lines or `maxQueuedBytes` go, counted as dropped (queue.ts). */
  private trim(q: Queue): void {
    trimQueue(q, this.opts.maxQueued, this.opts.maxQueuedBytes);
  }

  /** Reads the destinations again; resolves once a read that began after this call is in (not an older one). */
  async refresh(): Promise<void> {
    if (this.refreshing) {
      // a read under way may have begun before the change this caller wants: wait for it, then read (or join
      // a read begun since)
      await this.refreshing.catch(() => undefined);
      if (this.refreshing) return this.refreshing;
    }
    this.refreshWanted = false;
    this.refreshing = loadShippingTargets(this.opts.knex)
      .then(async (t) => {
        this.targets = t;
        if (Date.now() - this.sweptAll > SWEEP_EVERY_MS) {
          // environments that wrote nothing lately keep no older files either
          this.sweptAll = Date.now();
          for (const [envId, target] of t)
            await sweep(this.opts.dataDir, envId, target.keepDays).catch(() => undefined);
        }
      })
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }

  /** One round: machine files, sweeps, then a batch per environment whose backoff has passed. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      if (this.refreshWanted) await this.refresh().catch(() => undefined);
      await this.loadSecrets();
      await this.writeMachineFiles().catch((err) =>
        this.opts.logger?.warn({ err: (err as Error).message }, 'could not write the machine log files'),
      );
      for (const [envId, q] of this.queues) if (q.lines > 0 || q.dropped > 0) this.startSending(envId, q, true);
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /**
   * Begins sending the queue to its environment's destination as last read, unless a send (which takes what comes
   * meanwhile) or a backoff is under way. `atFlush`: a flush asks, which also forgets a queue whose environment is
   * unknown, and holds one without a destination (`hold`).
   */
  private startSending(envId: string, q: Queue, atFlush: boolean): void {
    if (q.sending || q.retryAt > Date.now()) return;
    const target = this.targets.get(envId);
    if (!target) {
      // read again after the push, and no such environment; a read under way may yet learn it
      if (atFlush && !this.refreshWanted && !this.refreshing) this.forgetQueue(envId);
      return;
    }
    let dest: Destination | null = null;
    try {
      dest = openDestination(this.opts.secrets, target.row);
    } catch {
      dest = null;
    }
    if (!dest) {
      if (atFlush) this.hold(envId, q);
      return;
    }
    void this.send(envId, target.projectId, dest, q);
  }

  /** Sends the queue's lines batch after batch until it is empty or a batch fails (then: backoff). */
  private async send(envId: string, projectId: string, dest: Destination, q: Queue): Promise<void> {
    q.sending = true;
    // the destination as read when the sending began: once it is read again (changed or removed), the lines
    // left wait for the next flush, which opens what is read then
    const target = this.targets;
    try {
      while ((q.lines > 0 || q.dropped > 0) && !this.closed && this.targets === target) {
        const batch = dequeue(q, this.opts.batchMax);
        const dropped = q.dropped;
        const blocks = dropped
          ? [
              blockOf(
                `${lineText({
                  time: new Date().toISOString(),
                  environment_id: envId,
                  type: 'dropped',
                  dropped,
                  message: `${dropped} lines were dropped (the destination could not be reached, or the edge's buffer was full)`,
                })}\n`,
              ),
              ...batch.blocks,
            ]
          : batch.blocks;
        try {
          // the secret values as read at this flush (only an environment with secret values pays for it), or now
          // when its destination was learnt after that read
          if (!this.redactor.loaded(envId)) await this.redactor.load(new Map([[envId, projectId]]));
          const redact = this.redactor.textRedactor(envId);
          const texts = redact ? blocks.map((b) => redactBlock(redact, b)) : blocks;
          await sendBlocks(dest, envId, texts, this.opts.outbound);
        } catch (err) {
          requeue(q, batch);
          this.trim(q);
          q.failures += 1;
          q.retryAt = Date.now() + Math.min(this.opts.maxBackoffMs, 1000 * 2 ** (q.failures - 1));
          this.report(projectId, describeFailure(err));
          return;
        }
        q.dropped -= dropped;
        q.failures = 0;
        q.retryAt = 0;
        this.report(projectId, null);
      }
    } finally {
      q.sending = false;
    }
  }

  /** last_sent_at / last_error of the project: on a change of state, else at most every 30 s. */
  private report(projectId: string, error: string | null): void {
    const last = this.reported.get(projectId);
    const ok = error === null;
    if (last && last.ok === ok && Date.now() - last.at < REPORT_EVERY_MS) return;
    this.reported.set(projectId, { at: Date.now(), ok });
    void recordDelivery(this.opts.knex, projectId, error).catch(() => undefined);
  }

  /**
   * Reads the secret values of the environments with lines waiting. If the database cannot be read now,
   * the values read before are used (a day's worth are kept).
   */
  private async loadSecrets(): Promise<void> {
    const envs = new Map<string, string>();
    for (const envId of [...this.machine.keys(), ...this.queues.keys()]) {
      const projectId = this.targets.get(envId)?.projectId;
      if (projectId) envs.set(envId, projectId);
    }
    await this.redactor
      .load(envs)
      .catch((err) =>
        this.opts.logger?.warn({ err: (err as Error).message }, 'could not read the secret variables to hide'),
      );
  }

  /**
   * Reads the secret values of those of `envIds` never read (an environment whose destination this process learnt
   * after the flush's read, or that has none): its lines never leave before they are known. Throws when the
   * database cannot be read; the lines then wait.
   */
  private async loadUnread(envIds: string[]): Promise<void> {
    const unread = envIds.filter((id) => !this.redactor.loaded(id));
    if (unread.length === 0) return;
    await this.redactor.load(await projectsOfEnvironments(this.opts.knex, unread));
  }

  /** Writes the lines waiting for the machine files (redacted: only an environment with secret values is). */
  private async writeMachineFiles(): Promise<void> {
    await this.loadUnread([...this.machine.keys()]);
    const pending = [...this.machine];
    this.machine.clear();
    this.last = null;
    for (const [envId, days] of pending) {
      const redact = this.redactor.textRedactor(envId);
      for (const [day, lines] of days) {
        // one write of the blocks as they are (each ends with its newline)
        const text = redact ? lines.map((b) => redactBlock(redact, b)) : lines;
        await appendMachineLines(this.opts.dataDir, envId, this.opts.source, day, text);
      }
      const keepDays = this.targets.get(envId)?.keepDays;
      if (keepDays === undefined) continue;
      const last = this.swept.get(envId);
      if (!last || last.keepDays !== keepDays || Date.now() - last.at > SWEEP_EVERY_MS) {
        this.swept.set(envId, { at: Date.now(), keepDays });
        await sweep(this.opts.dataDir, envId, keepDays);
      }
    }
  }
}

/** A block with each of its lines redacted (an environment with secret values). */
function redactBlock(redact: (line: string) => string, block: Buffer): Buffer {
  return blockOf(`${splitLines(block).map(redact).join('\n')}\n`);
}
