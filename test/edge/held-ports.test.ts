import { readFileSync } from 'node:fs';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ephemeralOverlap, findHeldPorts } from '../../edge/haproxy/held-ports';
import { freePortRange } from '../helpers/ports';

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
});
