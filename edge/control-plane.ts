/**
 * The edge's control plane once its parts are up (edge/server.ts starts it): the model of the state it last
 * applied, how a new state reaches HAProxy (runtime API, or a reload for a structural change), the watch that
 * starts a dead HAProxy again, the LISTEN on `vc_edge` and the periodic refresh. Named parts:
 * - `reload()`: read the state (after the database clock) and `apply` it, then check it in (`edge_instances`);
 * - `apply(next)`: the files, then the runtime API or a debounced reload;
 * - `syncCertificates()`: new certificates into the running HAProxy before the state that names them
 *   (edge/haproxy-certificates.ts);
 * - `start()`: the first state (adopting a running HAProxy), the watch, the subscription and the timer;
 * - `close()`: stops them, then HAProxy and the parts side by side, and removes the edge's row.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { type EdgeState, loadEdgeState } from './state';
import type { EdgeParts } from './parts';
import { loadCertificateChanges } from './haproxy-certificates';
import type { CertificateFileChanges } from './certificate-files';
import { buildModel, type EdgeModel, mapFile } from './haproxy/model';
import { PAGES_LUA, pagesLua } from './haproxy/pages';
import { bindable } from './haproxy/held-ports';
import { type ConfigOptions, renderConfig } from './haproxy/config';
import { type HaproxyPaths, writeAtomic } from './haproxy/paths';
import { DataPlaneFiles } from './haproxy/files';
import type { HaproxyProcess } from './haproxy/process';
import { allServerCommands, applyFiles, applyServers, changedFiles, serverCommands } from './haproxy/runtime';
import { EDGE_CHANNEL, edgeApplied, edgeSessionName } from '../db/queries/edge-routes';
import { unregisterEdge } from '../db/queries/cdn';
import { SERVES_WITHOUT_DATABASE } from '../db/knex';
import type { Edge, EdgeOptions } from './edge-options';

const WATCH_MS = 500;
const RELOAD_DEBOUNCE_MS = 100;
/** A reload still running after this long is logged, naming the step it waits on (and again each time). */
const SLOW_RELOAD_MS = 20_000;

/** What edge/server.ts set up before the control plane runs. */
interface ControlPlaneParts {
  paths: HaproxyPaths;
  parts: EdgeParts;
  haproxy: HaproxyProcess;
  /** HAProxy's configuration options; `heldPorts` shrinks as held ports become free. */
  configOptions: ConfigOptions & { heldPorts: number[] };
  slots: number;
  /** The edge's row in edge_instances (edge-id.ts). */
  edgeRow: { id: string; name: string };
  certificates: {
    /** Writes the certificates' files; what it wrote and removed, or null when none are kept. */
    sync: () => Promise<CertificateFileChanges | undefined>;
    /** The certificates' directory, when HAProxy serves HTTPS from it. */
    dir: string | undefined;
    /** The hostnames HAProxy serves a certificate for (the crt-list's). */
    hosts: () => string[];
  };
}

export class EdgeControlPlane implements Edge {
  adopted = false;
  /** The model HAProxy holds (last applied). */
  private model: EdgeModel | null = null;
  /** The skeleton HAProxy runs (config without servers' addresses, plus pages): a change means a reload. */
  private loaded: string | null = null;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  private reloading: Promise<void> | null = null;
  /** A reload was asked while one ran: it reads and applies once more. */
  private again = false;
  /** The step the running reload is on (for the slow reload's warning). */
  private step = 'idle';
  private restarting = false;
  private client: pg.Client | null = null;
  private watch: NodeJS.Timeout | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** The pages, maps and ACLs on disk: what this control plane wrote, so only changes are written again. */
  private readonly files: DataPlaneFiles;
  /** Ports outside ENVIRONMENT_PORTS already named in a warning (an environment left from a wider range). */
  private readonly outside = new Set<number>();

  constructor(
    private readonly o: EdgeOptions,
    private readonly p: ControlPlaneParts,
  ) {
    this.files = new DataPlaneFiles(p.paths.dir);
  }

  get port(): number {
    return this.p.configOptions.edgePort;
  }

  haproxyPid(): number | null {
    return this.p.haproxy.pid;
  }

  reloads(): number {
    return this.p.haproxy.reloads;
  }

  /** First state (adopting a running HAProxy, or starting one), then the watch, the subscription and the timer. */
  async start(): Promise<void> {
    const { o, p } = this;
    try {
      const { rows } = await o.knex.raw('SELECT now() AS at');
      const state = await loadEdgeState(o.knex);
      const first = this.modelOf(state, null);
      let running = '';
      try {
        running = readFileSync(p.paths.config, 'utf8');
      } catch {
        // none yet
      }
      this.writeFiles(first);
      // what HAProxy is started with (Varnish may move its port meanwhile: then this differs from what is wanted)
      const skeleton = this.skeletonOf(first);
      const adopted = await p.haproxy.ensure();
      // An adopted HAProxy runs the configuration a previous control plane wrote. The same one: its maps, ACLs
      // and servers are brought in line through the runtime API (no reload: kept-alive clients stay connected).
      if (adopted && running === renderConfig(first, p.configOptions)) {
        await applyFiles(p.paths.admin, p.paths.dir, first, [...first.files.keys()]);
        await applyServers(p.paths.admin, allServerCommands(first, o.environmentPorts, p.slots));
      } else if (adopted) await p.haproxy.reload();
      this.loaded = skeleton;
      this.model = first;
      await p.parts.sync();
      await edgeApplied(o.knex, p.edgeRow.id, rows[0].at, p.configOptions.heldPorts);
      this.adopted = adopted;
    } catch (err) {
      await p.parts.close(false).catch(() => undefined);
      throw err;
    }
    this.watchHaproxy();
    // Varnish moved its port: the configuration names it, so the next apply reloads HAProxy (at once when it moved
    // during this start)
    p.parts.onChange = () => void this.reload().catch(() => undefined);
    if (this.skeletonOf(this.model) !== this.loaded) p.parts.onChange();
    await this.subscribe();
    this.timer = setInterval(() => void this.reload().catch(() => undefined), o.refreshMs ?? 30_000);
    this.timer.unref();
  }

  /** Reads the state and makes HAProxy hold it, once more when asked again meanwhile; one at a time. */
  reload = (): Promise<void> => {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = this.reloadLoop().finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  };

  async close(): Promise<void> {
    const { o, p } = this;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.watch) clearInterval(this.watch);
    if (this.retry) clearTimeout(this.retry);
    await this.reloading?.catch(() => undefined);
    await this.client?.end().catch(() => undefined);
    // HAProxy and Varnish stop side by side (each may take seconds): within the supervisor's stop timeout. Both
    // are waited for, also when one fails, so a failure of the one never leaves the other running.
    const stopped = await Promise.allSettled([
      o.keepDataPlane ? undefined : p.haproxy.stop(),
      p.parts.close(o.keepDataPlane ?? false),
    ]);
    // its row goes once its HAProxy has stopped (kept for a successor that adopts it)
    if (!o.keepDataPlane && stopped[0].status === 'fulfilled') await unregisterEdge(o.knex, p.edgeRow.id);
    const failed = stopped.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async reloadLoop(): Promise<void> {
    const { o, p } = this;
    const began = Date.now();
    // a reload that hangs holds every later one (they join it): say where, so that it can be found
    const slow = setInterval(
      () => o.logger?.warn({ step: this.step, waitedMs: Date.now() - began }, 'an edge reload is taking long'),
      SLOW_RELOAD_MS,
    );
    slow.unref();
    try {
      do {
        this.again = false;
        const read = await this.readState().catch((err: Error) => {
          // the database away or slow (a pool's acquire timed out): HAProxy serves on with what it holds. Said and
          // tried again, never dropped: the change that asked for this reload is not in force yet
          o.logger?.warn({ err: err.message }, 'the edge could not read the state to apply; retrying');
          this.later();
          return null;
        });
        if (!read || this.closed) break;
        const { readAt, state, dropRemovedCertificates } = read;
        try {
          let applied: string | null = null;
          try {
            applied = await this.apply(this.modelOf(state, this.model));
          } finally {
            this.step = 'dropping removed certificates';
            await dropRemovedCertificates();
          }
          if (applied !== null) {
            if (applied) o.logger?.info({ readAt, how: applied }, 'the edge applied a change');
            this.step = 'syncing passwords';
            await this.syncPasswords();
            this.step = 'checking the applied state in';
            await edgeApplied(o.knex, p.edgeRow.id, readAt, p.configOptions.heldPorts);
          }
        } catch (err) {
          o.logger?.warn({ err: (err as Error).message }, 'the edge could not apply the new state; retrying');
          // what HAProxy holds is unknown now: the next apply reloads
          this.loaded = null;
          this.later();
        }
      } while (this.again && !this.closed);
    } finally {
      clearInterval(slow);
      this.step = 'idle';
    }
  }

  /** The database clock, then the certificates (loaded at runtime) and the state read after it. */
  private async readState() {
    // the database clock before the reads: every change committed before it is in what is applied
    this.step = 'reading the database clock';
    const { rows } = await this.o.knex.raw('SELECT now() AS at');
    const readAt: Date = rows[0].at;
    this.step = 'syncing certificates';
    // (should the state's read fail, a certificate just removed stays loaded until a reload: never the other way)
    const dropRemovedCertificates = await this.syncCertificates();
    this.step = 'reading the state';
    return { readAt, state: await loadEdgeState(this.o.knex), dropRemovedCertificates };
  }

  /**
   * Makes HAProxy hold `next`: runtime changes, or a reload for structural ones (or a start). Resolves with how
   * (for the log: '' when nothing changed), or null when it gave way to a newer state (a debounced reload).
   */
  private async apply(next: EdgeModel): Promise<string | null> {
    const { o, p } = this;
    const options = p.configOptions;
    // a held port an environment has: bound (a reload) once the other program lets it go
    for (const port of [...options.heldPorts]) {
      if (!next.envs.has(port)) continue;
      if (await bindable(o.host, port)) options.heldPorts = options.heldPorts.filter((h) => h !== port);
      else {
        o.logger?.warn({ port }, 'the edge cannot listen on an environment port yet; retrying in a second');
        this.later();
      }
    }
    const before = this.model;
    let how: string;
    this.step = 'writing the files';
    this.writeFiles(next);
    const skeleton = this.skeletonOf(next);
    if (!p.haproxy.alive()) {
      this.step = 'starting HAProxy';
      how = 'started HAProxy';
      const adopted = await p.haproxy.ensure();
      // an adopted HAProxy runs what the previous control plane wrote: load this one's files
      if (adopted) await p.haproxy.reload();
    } else if (skeleton !== this.loaded || !before) {
      // debounced: a burst of changes (notifications come per statement) makes one reload, of the last state
      await new Promise((r) => setTimeout(r, RELOAD_DEBOUNCE_MS));
      if (this.again && !this.closed) return null;
      this.step = 'reloading HAProxy';
      how = 'reloaded HAProxy';
      await p.haproxy.reload();
    } else {
      this.step = "updating HAProxy's maps and ACLs";
      const changed = changedFiles(before, next);
      const servers = serverCommands(before, next);
      how = [...changed, ...(servers.length ? [`${servers.length} server commands`] : [])].join(', ');
      await applyFiles(p.paths.admin, p.paths.dir, next, changed, before);
      this.step = "updating HAProxy's servers";
      await applyServers(p.paths.admin, servers);
    }
    this.loaded = skeleton;
    this.model = next;
    return how;
  }

  /**
   * Writes the files of `next` (pages, maps, ACLs, then haproxy.cfg) that differ from what is on disk,
   * atomically, then removes the pages, maps and ACLs `next` no longer has (the new haproxy.cfg names none).
   */
  private writeFiles(next: EdgeModel): void {
    this.files.write(next.pages);
    this.files.write(next.files);
    writeAtomic(this.p.paths.config, renderConfig(next, this.p.configOptions));
    this.files.prune({ has: (f) => next.pages.has(f) || next.files.has(f) });
  }

  /** The model of `state`, with the other parts' files. */
  private modelOf(state: EdgeState, previous: EdgeModel | null): EdgeModel {
    const { o, p } = this;
    const m = buildModel(state, previous, p.certificates.hosts(), p.slots);
    const map = (name: string) => join(p.paths.dir, mapFile(name));
    m.pages.set(PAGES_LUA, pagesLua({ pages: map('pages'), projects: map('env-project') }));
    for (const [file, text] of o.files?.(state) ?? []) m.files.set(file, text);
    // HAProxy has a backend for the range's ports only: another port is not served (and names no server)
    for (const port of m.envs.keys()) {
      if (port >= o.environmentPorts.from && port <= o.environmentPorts.to) continue;
      m.envs.delete(port);
      if (!this.outside.has(port))
        o.logger?.warn({ port }, 'an environment has a port outside ENVIRONMENT_PORTS: not served');
      this.outside.add(port);
    }
    return m;
  }

  private skeletonOf(m: EdgeModel): string {
    return renderConfig(m, this.p.configOptions, true) + [...m.pages].map(([f, t]) => `${f}\0${t}`).join('\0');
  }

  /** The certificates' files synced, and their changes loaded into the running HAProxy (loadCertificateChanges). */
  private async syncCertificates(): Promise<() => Promise<void>> {
    const { o, p } = this;
    const changes = await p.certificates.sync();
    const crtList = p.configOptions.tls?.crtList;
    const dir = p.certificates.dir;
    if (!changes || !crtList || !dir || !p.haproxy.alive()) return async () => undefined;
    return loadCertificateChanges({
      admin: p.paths.admin,
      crtList,
      dir,
      changes,
      failed: (err) => {
        o.logger?.warn({ err: (err as Error).message }, 'the edge could not load certificates at runtime; reloading');
        this.loaded = null; // the next apply reloads: HAProxy reads the files
      },
    });
  }

  /** The password map into the running HAProxy (after every state applied, and every start or reload). */
  private syncPasswords(): Promise<void> {
    return this.p.parts.sync().catch((err) => {
      this.o.logger?.warn({ err: (err as Error).message }, 'the edge could not update the password map; retrying');
      this.later();
    });
  }

  /** A reload in a second (a retry), unless one is due already. */
  private later(): void {
    if (this.retry || this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      void this.reload().catch(() => undefined);
    }, 1000);
    this.retry.unref();
  }

  /** HAProxy died (a SIGKILL, a crash): started again from the files, which hold the last state. */
  private watchHaproxy(): void {
    const { o, p } = this;
    this.watch = setInterval(() => {
      if (this.closed || this.restarting || p.haproxy.alive()) return;
      this.restarting = true;
      o.logger?.warn({}, 'HAProxy is not running; starting it again');
      this.loaded = null;
      void p.haproxy
        .ensure()
        .then(() => this.reload())
        .catch((err) => o.logger?.warn({ err: (err as Error).message }, 'the edge could not start HAProxy'))
        .finally(() => {
          this.restarting = false;
        });
    }, WATCH_MS);
    this.watch.unref();
  }

  /** LISTEN on a connection of its own, reconnected when it drops (then reloaded: changes may have been missed). */
  private async subscribe(): Promise<void> {
    const { o, p } = this;
    while (!this.closed) {
      // named after this edge's row: while it is connected, deploys wait for this edge (awaitEdges); once the
      // process is gone (a SIGKILL closes it), they do not wait out the row's 15 s
      const c = new pg.Client({
        connectionString: o.databaseUrl,
        application_name: edgeSessionName(p.edgeRow.id),
        // a database host cut off drops packets: try again rather than wait on the connect for good
        connectionTimeoutMillis: SERVES_WITHOUT_DATABASE.connectTimeoutMs,
      });
      try {
        await c.connect();
        c.on('notification', (n) => {
          if (n.payload === 'cdn_purges') void p.parts.purges.check().catch(() => undefined);
          else void this.reload().catch(() => undefined);
        });
        await c.query(`LISTEN ${EDGE_CHANNEL}`);
        this.client = c;
        c.on('error', () => {
          this.client = null;
          void c.end().catch(() => undefined);
          if (!this.closed) setTimeout(() => void this.subscribe(), 1000);
        });
        await this.reload();
        await p.parts.purges.check().catch(() => undefined);
        return;
      } catch {
        await c.end().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}
