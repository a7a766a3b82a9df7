/**
 * Memory of processes as the kernel counts it (/proc): RSS, and PSS (each shared page divided among the
 * processes that map it), which is what one more process of a kind really adds to the machine.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import v8 from 'node:v8';

export interface ProcessMemory {
  pid: number;
  ppid: number;
  uid: number;
  comm: string;
  rssKb: number;
  pssKb: number;
}

const field = (text: string, name: string) => {
  const m = new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
};

/** One process's memory, or null when it is gone (or not readable). */
function processMemory(pid: number): ProcessMemory | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return {
      pid,
      ppid: field(status, 'PPid'),
      uid: field(status, 'Uid'),
      comm: /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '',
      rssKb: field(rollup, 'Rss'),
      pssKb: field(rollup, 'Pss'),
    };
  } catch {
    return null;
  }
}

/** Every process of the machine this process may read. */
export function allProcesses(): ProcessMemory[] {
  const out: ProcessMemory[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = processMemory(Number(name));
    if (p) out.push(p);
  }
  return out;
}

/** `pid` and its descendants (HAProxy's master and its workers). */
export function processTree(pid: number, all = allProcesses()): ProcessMemory[] {
  const tree = all.filter((p) => p.pid === pid);
  for (let i = 0; i < tree.length; i++) tree.push(...all.filter((p) => p.ppid === tree[i].pid));
  return tree;
}

export const sum = (ps: ProcessMemory[], key: 'rssKb' | 'pssKb') => ps.reduce((n, p) => n + p[key], 0);

/** This process's V8 heap in use after a full collection (bytes). */
export function heapAfterGc(): number {
  v8.setFlagsFromString('--expose_gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}
