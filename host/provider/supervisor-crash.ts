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
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly tell: OnWebCrash | undefined) {}

  /**
   * Sends the environment's record when it differs from the last one sent (always the first); resolves once it is sent (a failed send
   * is forgotten, and tried again at the next report).
   */
  report(envId: string, webs: readonly WebProcess[]): Promise<void> {
    if (!this.tell) return Promise.resolve();
    const crash = crashOf(webs);
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
