/**
 * HAProxy binds every port of ENVIRONMENT_PORTS (one range bind, config.ts) without SO_REUSEPORT, so a port of
 * the range another program holds would make it refuse the whole configuration. Those ports are found before
 * HAProxy starts, left out of the bind, and named in haproxy.cfg (a comment), so a control plane that adopts
 * the running HAProxy knows them; one an environment has is tried again until it is free (a reload).
 */
import net from 'node:net';
import { readFileSync } from 'node:fs';

const HELD = '# ports of ENVIRONMENT_PORTS another program held:';

/** Whether a port can be bound now. */
export function bindable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/** The ports of `from-to` that cannot be bound now (tried 50 at a time). */
export async function findHeldPorts(host: string, from: number, to: number): Promise<number[]> {
  const held: number[] = [];
  for (let start = from; start <= to; start += 50) {
    const ports = Array.from({ length: Math.min(50, to - start + 1) }, (_, i) => start + i);
    const free = await Promise.all(ports.map((p) => bindable(host, p)));
    ports.forEach((p, i) => {
      if (!free[i]) held.push(p);
    });
  }
  return held;
}

/** The configuration's comment line naming the held ports (none: no line). */
export const heldPortsLine = (held: number[]) => (held.length ? [`  ${HELD} ${held.join(' ')}`] : []);

/** The held ports a configuration file names (null: no such file). */
export function heldPortsOf(config: string): number[] | null {
  let text: string;
  try {
    text = readFileSync(config, 'utf8');
  } catch {
    return null;
  }
  const line = text.split('\n').find((l) => l.trim().startsWith(HELD));
  return line ? line.trim().slice(HELD.length).trim().split(/\s+/).map(Number) : [];
}

/**
 * The part of `from`-`to` inside the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), or null: the
 * kernel gives those ports to outgoing connections as their local end, and a port held so is one the edge
 * leaves out until that connection ends (a database pool's may last for days).
 */
export function ephemeralOverlap(from: number, to: number): { from: number; to: number } | null {
  let low = 32768;
  let high = 60999;
  try {
    [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  } catch {
    // not Linux's /proc: its default range
  }
  const overlap = { from: Math.max(from, low), to: Math.min(to, high) };
  return overlap.from <= overlap.to ? overlap : null;
}
