import type { Socket } from 'node:net';
import { setPriority } from 'node:os';
import { startRequestShipper } from './shipper-runtime';
import { closeOnStopSignals, databaseProcess } from './database-process';
import { HANDED_ENV, SHIPPER_CONNECTION, SHIPPER_ENDED, SHIPPER_READY } from './request-log-socket';

// The request log's shipper: `tsx processes/shipper.ts` (processes/shipper-runtime.ts). It needs PostgreSQL only;
// HAProxy's ring forwards the request lines to its socket under DATA_DIR, and keeps them while it is away.
// Under `npm start` (VC_REQUEST_LOG_SOCKET=handed, an IPC channel) the supervisor holds that socket and hands it HAProxy's connections
// (processes/request-log-socket.ts); run alone, it listens itself.
// Under systemd (deploy/systemd/vc-console-shipper.socket) the socket is systemd's, given as fd 3 (sd_listen_fds).
/** The shipper's niceness (0-19: higher yields more; HAProxy and the apps run at 0). */
const SHIPPER_NICENESS = 5;
const handed = process.env[HANDED_ENV] === 'handed';
if (handed && typeof process.send !== 'function')
  throw new Error(`${HANDED_ENV}=handed: the connections come over an IPC channel, and this process has none`);
const activated = process.env.LISTEN_PID === String(process.pid) && Number(process.env.LISTEN_FDS) >= 1;
for (const name of ['LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES']) delete process.env[name];
const { config, logger, knex, secrets } = databaseProcess('shipper');
// Shipping the log is background work: the shipper yields the CPU to HAProxy and the apps when they want it
// (niceness SHIPPER_NICENESS). It reads in bursts (logs/request-reader.ts), and a burst no longer delays the
// requests HAProxy is serving: in `npm run bench -- edge`, the p99 the edge adds at half rate went from 2.25-2.32 ms
// to 1.47-2.06 ms (four runs, three under 2 ms). Its lines wait meanwhile in HAProxy's ring.
try {
  setPriority(SHIPPER_NICENESS);
} catch (err) {
  logger.warn(
    { err: (err as Error).message },
    "could not lower the shipper's CPU priority; it runs at the default one",
  );
}
const starting = startRequestShipper({
  knex,
  databaseUrl: config.databaseUrl,
  dataDir: config.dataDir,
  secrets,
  outbound: config,
  logger,
  socket: handed ? 'handed' : activated ? { fd: 3 } : 'listen',
});
// A stop signal may come as soon as it is ready (the supervisor's readiness), before the start has resolved: it
// waits for the start, then closes.
closeOnStopSignals({ what: 'shipper', close: async () => (await starting).close(), knex, logger });
const { reader } = await starting;
if (handed) {
  process.on('message', (m: { type?: string; id?: number }, handle) => {
    if (m?.type !== SHIPPER_CONNECTION || !handle) return;
    const socket = handle as Socket;
    // the supervisor keeps its copy of the connection until it hears that it ended
    socket.once('close', () => {
      if (process.connected) process.send?.({ type: SHIPPER_ENDED, id: m.id }, undefined, undefined, () => undefined);
    });
    reader.adopt(socket);
  });
  process.send?.(SHIPPER_READY);
}
logger.info({}, 'request log shipper running');
