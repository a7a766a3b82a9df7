/**
 * varnishd's processes by pid: whether one runs, stopping one (SIGTERM, then SIGKILL), and stopping what a
 * control plane left running under a Varnish directory.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after 10 s; resolves once the process is gone. */
export async function stop(pid: number): Promise<void> {
  if (!alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (alive(pid) && Date.now() < deadline) await sleep(50);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
  while (alive(pid)) await sleep(50);
}

/**
 * Stops every varnishd of `dir` a control plane left running (it was SIGKILLed, or its stop was cut short):
 * `npm start`'s stop leaves no CDN tier behind. False when none ran.
 */
export async function stopLeftVarnish(dir: string): Promise<boolean> {
  const work = path.join(dir, 'n');
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.some((a) => a.includes('varnishd')) && args.includes(work)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  await Promise.all(pids.map((pid) => stop(pid).catch(() => undefined)));
  return pids.length > 0;
}
