/**
 * The request log's shipper (docs/edge-password-and-logs.md): its own process under `npm start`
 * (processes/shipper.ts), beside the edge's control plane, which reads no request line. It listens on the unix
 * socket HAProxy's ring `vc_requests` forwards to (logs/request-reader.ts), and hands each line, unparsed, to a
 * LogShipper (logs/shipper.ts) that writes the machine's day files and sends batches to each project's
 * destination. While it is away (a crash, a restart) the lines wait in HAProxy's ring.
 *
 * A destination saved, changed or removed is used for the next line within 2 s (issue 28 item 2): the shipper
 * LISTENs on `vc_edge` (`project_log_settings` notifies it) and reads the destinations again at once, and again
 * when its LISTEN connection is back after a loss (what changed meanwhile). PostgreSQL loses no notification
 * while the connection is up, so the periodic read is only a safety net: every `refreshMs` (10 s). Reading every
 * second was most of an idle shipper's CPU (two queries through knex a second: ~10 ms/s here under load), which
 * `npm run bench -- edge` counts in the CPU per line. Lines of an environment without a destination are held 2 s
 * (`holdMs`), as before.
 */
import type { Knex } from 'knex';
import pg from 'pg';
import { EDGE_CHANNEL } from '../db/queries/edge-routes';
import { requestLogPaths } from '../edge/request-log/control';
import { dataPlaneUser, openEdgeDir, shareSocket } from '../edge/privileges';
import type { OutboundConfig } from '../host/outbound';
import { RequestLogReader } from '../logs/request-reader';
import { LogShipper, type ShipperOptions } from '../logs/shipper';
import type { Secrets } from '../system/secrets';

interface RequestShipperOptions {
  knex: Knex;
  databaseUrl: string;
  dataDir: string;
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;
  outbound: OutboundConfig;
  logger?: { warn(obj: unknown, msg?: string): void };
  /**
   * LogShipper's settings (default: a flush a second, batches of 2,000 lines, 40,000 lines queued at most, the
   * destinations read again every 10 s and at each notification).
   */
  shipper?: Partial<
    Pick<ShipperOptions, 'flushMs' | 'refreshMs' | 'holdMs' | 'maxBackoffMs' | 'batchMax' | 'maxQueued'>
  >;
  /** How long a gap in the sequence numbers may stay open before it counts as lost (2 s). */
  reorderMs?: number;
  /**
   * `listen` (default): the shipper listens on the request log's socket itself. `handed`: its supervisor holds the
   * socket and hands each of HAProxy's connections to `reader.adopt` (processes/request-log-socket.ts).
   * `{fd}`: systemd's socket activation gave it the listening socket (deploy/systemd/vc-console-shipper.socket).
   */
  socket?: 'listen' | 'handed' | { fd: number };
}

/** Lines of a batch to a destination: an http batch is one POST (a connection each), a syslog batch one socket. */
export const REQUEST_BATCH_LINES = 2000;

export interface RequestShipper {
  shipper: LogShipper;
  reader: RequestLogReader;
  close(): Promise<void>;
}

export async function startRequestShipper(o: RequestShipperOptions): Promise<RequestShipper> {
  const shipper = await new LogShipper({
    knex: o.knex,
    secrets: o.secrets,
    outbound: o.outbound,
    dataDir: o.dataDir,
    source: 'requests',
    logger: o.logger,
    refreshMs: 10_000,
    holdMs: 2000,
    // a flush's lines go in few sends; a second of a busy environment's lines (tens of thousands) fits its queue
    // (maxQueuedBytes bounds it too)
    batchMax: REQUEST_BATCH_LINES,
    maxQueued: 40_000,
    ...o.shipper,
  }).start();
  const paths = requestLogPaths(o.dataDir);
  let reader: RequestLogReader;
  try {
    openEdgeDir(o.dataDir);
    const socket = o.socket ?? 'listen';
    reader = await new RequestLogReader({
      socketPath: socket === 'listen' ? paths.socket : undefined,
      listenFd: typeof socket === 'object' ? socket.fd : undefined,
      cursorFile: paths.cursorFile,
      sink: shipper,
      reorderMs: o.reorderMs,
      logger: o.logger,
    }).start();
    // HAProxy's workers (the data plane's user) connect to it (a handed one is shared by whoever holds it)
    if (socket !== 'handed') shareSocket(paths.socket, dataPlaneUser(o.dataDir).user);
    if (socket === 'listen')
      o.logger?.warn(
        { socket: paths.socket },
        "the shipper listens on the request log's socket itself: while it is down, HAProxy's ring forwarder retries without a pause and spins a core. Run it under npm start or systemd (deploy/systemd/vc-console-shipper.socket), which hold the socket while it is away",
      );
  } catch (err) {
    await shipper.close();
    throw err;
  }

  // A changed destination: read again at once (LISTEN on a connection of its own, reconnected when it drops).
  let closed = false;
  let client: pg.Client | null = null;
  const listen = async (): Promise<void> => {
    while (!closed) {
      const c = new pg.Client({ connectionString: o.databaseUrl, application_name: 'vc-request-log-shipper' });
      try {
        await c.connect();
        c.on('notification', () => void shipper.refresh().catch(() => undefined));
        c.on('error', () => {
          client = null;
          void c.end().catch(() => undefined);
          if (!closed) setTimeout(() => void listen(), 1000);
        });
        await c.query(`LISTEN ${EDGE_CHANNEL}`);
        client = c;
        // what changed while it was not listening
        await shipper.refresh().catch(() => undefined);
        return;
      } catch {
        await c.end().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  await listen();

  return {
    shipper,
    reader,
    async close() {
      closed = true;
      await client?.end().catch(() => undefined);
      // the lines already read are written and sent; what HAProxy still holds waits in its ring
      await reader.close();
      await shipper.flush().catch(() => undefined);
      await shipper.close();
    },
  };
}
