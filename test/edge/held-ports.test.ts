import { readFileSync } from 'node:fs';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ephemeralOverlap, findHeldPorts } from '../../edge/haproxy/held-ports';
import { freePortRange } from '../helpers/ports';
import { freeListenPort } from '../../edge/listen-ports';

describe('ports of ENVIRONMENT_PORTS another program holds', () => {
  it('finds a port a listener holds, and no other of the range', async () => {
    const range = await freePortRange(5);
    const other = net.createServer();
    await new Promise<void>((r) => other.listen({ port: range.from + 2, host: '127.0.0.1' }, () => r()));
    try {
      expect(await findHeldPorts('127.0.0.1', range.from, range.to)).toEqual([range.from + 2]);
    } finally {
      await new Promise((r) => other.close(r));
    }
    expect(await findHeldPorts('127.0.0.1', range.from, range.to)).toEqual([]);
  });

  it("names the part of a range inside this kernel's ephemeral range, and none below it", () => {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    expect(ephemeralOverlap(20000, 20999)).toBeNull();
    expect(ephemeralOverlap(low - 10, low + 9)).toEqual({ from: low, to: low + 9 });
    expect(ephemeralOverlap(high - 4, high + 5)).toEqual({ from: high - 4, to: high });
  });

  it('picks the ports of its own listeners outside ENVIRONMENT_PORTS', async () => {
    const picked = new Set<number>();
    for (let i = 0; i < 20; i++) picked.add(await freeListenPort('127.0.0.1', { from: 10_000, to: 19_989 }));
    expect([...picked].every((p) => p >= 19_990 && p <= 19_999)).toBe(true);
    for (let i = 0; i < 20; i++) {
      const p = await freeListenPort('127.0.0.1', { from: 12_000, to: 17_999 });
      expect(p < 12_000 || p > 17_999).toBe(true);
    }
  });
});
