/**
 * The web processes' error output, shipped: each web process's stderr goes to its environment's
 * `web.err.log` (web-process.ts; a file, not a pipe, so a process outlives the worker without writing into
 * a closed pipe). This tail, run by the worker, reads what was added (polling, `pollMs`), pushes each line
 * to the worker's shipper as `{type: "stderr", message}` and remembers how far it read in
 * `web.err.offset`, so a restarted worker goes on where the previous one stopped (lines written while no
 * worker ran are shipped then). A file that shrank (truncated by an operator) is read from its start.
 */
import { open, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { webErrorLogPath } from '../host/environment-dir';
import type { LogShipper } from './shipper';

const OFFSET = 'web.err.offset';
const READ_MAX = 1 << 20;
/** A line longer than this is cut (and the rest taken as the next line). */
const LINE_MAX = 16 * 1024;

export class ErrorTail {
  private readonly offsets = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly shipper: LogShipper,
    private readonly pollMs = 500,
  ) {}

  start(): this {
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    return this;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  /** One pass over every environment's error log. */
  poll(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      let envIds: string[];
      try {
        envIds = await readdir(path.join(path.resolve(this.dataDir), 'environments'));
      } catch {
        return;
      }
      for (const envId of envIds) await this.read(envId).catch(() => undefined);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async read(envId: string): Promise<void> {
    const file = webErrorLogPath(this.dataDir, envId);
    const offsetFile = path.join(path.dirname(file), OFFSET);
    const size = (await stat(file)).size;
    let offset = this.offsets.get(envId);
    if (offset === undefined) offset = Number((await readFile(offsetFile, 'utf8').catch(() => '0')).trim()) || 0;
    if (size < offset) offset = 0;
    if (size === offset) return void this.offsets.set(envId, offset);
    const fh = await open(file, 'r');
    let buf: Buffer;
    try {
      buf = Buffer.alloc(Math.min(size - offset, READ_MAX));
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      buf = buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
    let used = 0;
    const time = new Date().toISOString();
    for (;;) {
      const nl = buf.indexOf(10, used);
      const end = nl < 0 ? -1 : nl;
      if (end < 0 && buf.length - used < LINE_MAX) break; // an unfinished line: wait for its end
      const stop = end < 0 ? used + LINE_MAX : Math.min(end, used + LINE_MAX);
      const message = buf.subarray(used, stop).toString('utf8').replace(/\r$/, '');
      used = stop === end ? end + 1 : stop;
      if (message.length > 0) this.shipper.push({ time, environment_id: envId, type: 'stderr', message });
      if (used >= buf.length) break;
    }
    offset += used;
    this.offsets.set(envId, offset);
    if (used > 0) await writeFile(offsetFile, String(offset), { mode: 0o600 });
  }
}
