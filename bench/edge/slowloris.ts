/**
 * A slowloris for the edge bench: `count` connections from one loopback address (127.0.0.5, not wrk's
 * 127.0.0.1), each sending half a request and nothing more; one the edge closes (over the per-address limit,
 * or its request timed out) is opened again at once, so the attack holds what it may for as long as it runs.
 */
import net from 'node:net';

export const ATTACKER_ADDRESS = '127.0.0.5';

interface Slowloris {
  /** Connections the edge closed (each opened again). */
  closed(): number;
  /** Connections open now. */
  open(): number;
  stop(): void;
}

export function startSlowloris(port: number, count: number): Slowloris {
  let running = true;
  let closed = 0;
  const sockets = new Set<net.Socket>();
  const connect = () => {
    if (!running) return;
    const s = net.connect({ host: '127.0.0.1', port, localAddress: ATTACKER_ADDRESS });
    sockets.add(s);
    s.on('connect', () => s.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '));
    s.on('error', () => undefined);
    s.on('close', () => {
      sockets.delete(s);
      if (!running) return;
      closed++;
      // not a busy loop: a refused address is tried again after a moment
      setTimeout(connect, 50);
    });
  };
  for (let i = 0; i < count; i++) connect();
  return {
    closed: () => closed,
    open: () => [...sockets].filter((s) => !s.connecting && !s.destroyed).length,
    stop() {
      running = false;
      for (const s of sockets) s.destroy();
    },
  };
}
