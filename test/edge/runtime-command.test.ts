/**
 * The runtime API client: a silent success (HAProxy answers an empty line) resolves, a connection HAProxy
 * closes without a byte (its CLI timeout, a stopping worker) rejects, so that an `add acl` or a `commit` that
 * was never run is not taken for one that was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeCommand } from '../../edge/runtime-command';
import { type Haproxy, startHaproxy } from '../helpers/haproxy';

let haproxy: Haproxy;
beforeAll(async () => {
  haproxy = await startHaproxy();
});
afterAll(async () => {
  await haproxy?.stop();
});

describe('runtimeCommand', () => {
  it("resolves a real HAProxy's silent success with an empty answer, and its answers trimmed", async () => {
    await expect(runtimeCommand(haproxy.socket, 'clear counters')).resolves.toBe('');
    expect(await runtimeCommand(haproxy.socket, 'show info')).toMatch(/^Name: HAProxy/);
  });

  it('rejects, naming the command, when the connection is closed without an answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-runtime-'));
    const socket = join(dir, 'admin.sock');
    const commands: string[] = [];
    // reads what is sent, then closes without a byte: what HAProxy does to a CLI connection it drops
    const server = net.createServer((c) => {
      c.on('data', (d) => {
        commands.push(d.toString());
        c.end();
      });
    });
    await new Promise<void>((r) => server.listen(socket, r));
    try {
      await expect(runtimeCommand(socket, 'add acl @3 /x/agents.acl ^p\\|.*bot')).rejects.toThrow(
        'HAProxy closed the connection without answering "add acl @3"',
      );
      expect(commands).toEqual(['add acl @3 /x/agents.acl ^p\\|.*bot\n']);
    } finally {
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
