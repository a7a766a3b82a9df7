/**
 * The supervisor of `npm start` (processes/supervision.ts) with small real children (`node -e`): what it does
 * when one fails on its first start, keeps exiting, or is stopped. The whole system under it is
 * test/system/supervision.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Supervision } from '../../processes/supervision';
import { consoleChildren } from '../../processes/start-children';
import type { Config } from '../../system/config';
import { freePort } from '../helpers/ports';

const dir = mkdtempSync(path.join(tmpdir(), 'vc-supervision-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const node = (name: string, code: string) => ({ name, command: process.execPath, args: ['-e', code] });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Supervision', () => {
  it('throws when a child exits before it is ready, and does not restart it', async () => {
    const lines: string[] = [];
    const s = new Supervision({ runDir: path.join(dir, 'a'), say: (l) => lines.push(l) });
    await expect(
      s.start({ ...node('broken', 'process.exit(3)'), ready: () => new Promise(() => undefined) }),
    ).rejects.toThrow('the broken process exited (exit code 3) before it was ready');
    await pause(1500); // longer than the first backoff
    expect(s.states()[0]).toMatchObject({ status: 'failed', pid: null, restarts: 0 });
    expect(lines).toEqual([]);
  });

  it('restarts a child that exits, then gives up on it alone after five exits within the window', async () => {
    const lines: string[] = [];
    const s = new Supervision({
      runDir: path.join(dir, 'b'),
      say: (l) => lines.push(l),
      backoff: { initialMs: 50, maxMs: 100 },
    });
    // ready at once, then it exits after a moment (a crash loop)
    await s.start(node('flaky', 'setTimeout(() => process.exit(1), 200)'));
    await s.start(node('steady', 'setInterval(() => {}, 1000)'));
    const deadline = Date.now() + 30_000;
    while (s.states()[0].status !== 'failed' && Date.now() < deadline) await pause(50);
    const [flaky, steady] = s.states();
    expect(flaky).toMatchObject({ status: 'failed', restarts: 4, last_exit: 'exit code 1' });
    expect(flaky.reason).toBe('exited 5 times within 60 s (last: exit code 1); not restarted');
    expect(
      lines.filter((l) => l.startsWith('The flaky process exited unexpectedly (exit code 1); restarting it in')),
    ).toHaveLength(4);
    expect(lines.at(-1)).toBe(
      'Giving up on the flaky process: it exited 5 times within 60 s (last: exit code 1); not restarted. The other processes keep running.',
    );
    expect(steady.status).toBe('running');
    const file = JSON.parse(readFileSync(path.join(dir, 'b', 'processes.json'), 'utf8'));
    expect(file.supervisor_pid).toBe(process.pid);
    expect(file.processes.map((p: { name: string; status: string }) => `${p.name} ${p.status}`)).toEqual([
      'flaky failed',
      'steady running',
    ]);
    expect(Number(readFileSync(path.join(dir, 'b', 'steady.pid'), 'utf8'))).toBe(steady.pid);

    await s.stop(['flaky', 'steady']);
    expect(lines.at(-1)).toMatch(/^Stopped the steady process \(\d+\.\d s\)\.$/);
    expect(() => process.kill(steady.pid!, 0)).toThrow();
    expect(s.states().map((p) => p.status)).toEqual(['stopped', 'stopped']);
  });

  it("says what the API's readiness probe saw last when the API is not ready in time", async () => {
    // npm start's own check of the API (processes/start-children.ts), on a port nothing listens on
    const port = await freePort();
    const { api } = consoleChildren({
      root: process.cwd(),
      env: {},
      config: { host: '127.0.0.1', port } as Config,
      knex: null as never,
    });
    const s = new Supervision({ runDir: path.join(dir, 'c'), say: () => undefined });
    await expect(
      s.start({ ...api, ...node('api', 'setInterval(() => {}, 1000)'), readyTimeoutMs: 1500 }),
    ).rejects.toThrow(
      `the api process was not ready within 1.5 s (its last probe of http://127.0.0.1:${port}/api/vc/v1/health: connect ECONNREFUSED 127.0.0.1:${port} after`,
    );
    await s.stop(['api']);
  });
});
