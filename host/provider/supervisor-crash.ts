/**
 * What the supervisor tells of live web processes that keep exiting (SupervisorOptions.onWebCrash): one record
 * per environment over its instances, sent when it changes, in order. A host's worker writes it to the
 * environment's `web` server (servers.crash), where the API and the console read it.
 */
import type { WebCrash } from '../../db/queries/machines';
import type { WebProcess } from './web-process';

export type OnWebCrash = (envId: string, crash: WebCrash | null) => Promise<void>;

/** The record of an environment's instances: null when none of them is crashing. */
function crashOf(webs: readonly WebProcess[]): WebCrash | null {
  const crashed = webs.flatMap((w) => (w.crash ? [w.crash] : []));
  if (crashed.length === 0) return null;
  const last = crashed.reduce((a, b) => (b.lastAt > a.lastAt ? b : a));
  return {
    since: new Date(Math.min(...crashed.map((c) => c.since.getTime()))).toISOString(),
    exit_code: last.code,
    signal: last.signal,
    exits: crashed.reduce((n, c) => n + c.exits, 0),
    last_exit_at: last.lastAt.toISOString(),
  };
}

export class CrashReports {
  private readonly sent = new Map<string, string>();
  /** Restored instances still settling: no clear is sent for them before `settleMs` (see `restored`). */
  private readonly held = new Map<string, { webs: readonly WebProcess[]; timer: NodeJS.Timeout }>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly tell: OnWebCrash | undefined,
    /** How long restored instances stay up before they count as steady (the restart backoff's `stableMs`). */
    private readonly settleMs: number,
  ) {}

  /**
   * Instances a worker's start brought back (`restoreAll`): what they did before is unknown, so a record the
   * previous worker left stands until they have stayed up `settleMs` (then it is cleared), or is replaced by a
   * record of their own exits. Cleared at once, an app that keeps exiting through a restart would begin a new
   * run of exits on the server: the team and its integrations would hear of the same crash loop again.
   */
  restored(envId: string, webs: readonly WebProcess[]): void {
    if (!this.tell) return;
    this.drop(envId);
    const timer = setTimeout(() => {
      if (this.held.get(envId)?.webs !== webs) return;
      this.held.delete(envId);
      void this.report(envId, webs);
    }, this.settleMs);
    timer.unref();
    this.held.set(envId, { webs, timer });
  }

  private drop(envId: string): void {
    const hold = this.held.get(envId);
    if (hold) clearTimeout(hold.timer);
    this.held.delete(envId);
  }

  /**
   * Sends the environment's record when it differs from the last one sent (always the first); resolves once it is sent (a failed send
   * is forgotten, and tried again at the next report).
   */
  report(envId: string, webs: readonly WebProcess[]): Promise<void> {
    if (!this.tell) return Promise.resolve();
    const crash = crashOf(webs);
    const hold = this.held.get(envId);
    if (hold?.webs === webs && crash === null) return this.chain; // restored, still settling
    if (hold) this.drop(envId); // their own exit, or other instances went live
    const key = JSON.stringify(crash);
    // the first report of an environment in this process is sent even when null: a record a previous worker (or
    // host) left for processes that are gone is cleared once this one has the environment live
    if (this.sent.get(envId) === key) return this.chain;
    this.sent.set(envId, key);
    const tell = this.tell;
    this.chain = this.chain.then(() =>
      tell(envId, crash).catch(() => {
        if (this.sent.get(envId) === key) this.sent.delete(envId);
      }),
    );
    return this.chain;
  }
}
