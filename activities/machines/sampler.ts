/**
 * The resource sampler of the local provider: every RESOURCE_SAMPLE_SECONDS the worker writes one sample per
 * environment: CPU (percent of one core, averaged since the previous sample), memory (bytes) and disk (bytes
 * of the environment's directories on this host). CPU and memory come from the environment's cgroup
 * (cgroups.ts: usage is hierarchical, so every web process, build and deploy step counts), or, without
 * cgroups, from /proc for the live web process group. Samples are rows of resource_samples.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Deps } from '../../system/deps';
import { insertSamples, type SampleRow } from '../../db/queries/resources';
import { environmentUsage, sweep } from '../../host/provider/cgroups';
import { environmentDir } from '../../host/provider/releases';
import { environmentVolume } from '../../db/queries/storage';
import type { Supervisor } from '../../host/provider/supervisor';

const run = promisify(execFile);
const CLOCK_TICKS = 100; // USER_HZ on Linux
const PAGE = 4096;

interface Reading {
  cpuNs: number;
  atNs: bigint;
}

export interface ResourceSampler {
  /** One round now (the timer calls it; tests may too). */
  sampleNow(): Promise<number>;
  stop(): void;
}

export function startResourceSampler(
  deps: Deps,
  supervisor: Supervisor,
  opts: { intervalSeconds: number },
): ResourceSampler {
  const last = new Map<string, Reading>();
  let running: Promise<number> | null = null;

  const round = async (): Promise<number> => {
    const envs: Array<{ id: string }> = await deps.knex('environments').select('id');
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    const rows: SampleRow[] = [];
    for (const { id } of envs) {
      const nowNs = process.hrtime.bigint();
      sweep(id);
      const usage = environmentUsage(id) ?? procUsage(supervisor.status(id)?.pid ?? null);
      const prev = last.get(id);
      last.set(id, { cpuNs: usage.cpuNs, atNs: nowNs });
      const cpu =
        prev && usage.cpuNs >= prev.cpuNs ? ((usage.cpuNs - prev.cpuNs) / Number(nowNs - prev.atNs)) * 100 : 0;
      rows.push({
        environment_id: id,
        at,
        cpu: Math.round(cpu * 100) / 100,
        memory_bytes: usage.memoryBytes,
        // its directory (releases, HOME) and its volume, which lives under a root of STORAGE_ROOTS
        disk_bytes:
          (await diskBytes(environmentDir(deps.config.dataDir, id))) +
          (await diskBytes(await environmentVolume(deps.knex, deps.config.storageRoots, id))),
      });
    }
    // An environment deleted during the round fails the insert (foreign key): write the others.
    try {
      await insertSamples(deps.knex, rows);
    } catch {
      const alive = new Set((await deps.knex('environments').select('id')).map((e: { id: string }) => e.id));
      await insertSamples(
        deps.knex,
        rows.filter((r) => alive.has(r.environment_id)),
      );
    }
    return rows.length;
  };

  const sampleNow = () => {
    running ??= round().finally(() => {
      running = null;
    });
    return running;
  };

  const timer = setInterval(() => {
    sampleNow().catch((err) => deps.logger.warn({ err }, 'resource sample round failed'));
  }, opts.intervalSeconds * 1000);
  timer.unref();
  return {
    sampleNow,
    stop: () => clearInterval(timer),
  };
}

/** Bytes under a directory (`du -sb`, which counts hard-linked files once); 0 when it does not exist. */
async function diskBytes(dir: string): Promise<number> {
  if (!existsSync(dir)) return 0;
  try {
    const { stdout } = await run('du', ['-sb', dir], { timeout: 30_000 });
    return Number(stdout.split(/\s/)[0]) || 0;
  } catch (err) {
    // du prints what it counted even when a file vanished under it
    const out = (err as { stdout?: string }).stdout ?? '';
    return Number(out.split(/\s/)[0]) || 0;
  }
}

/** Without cgroups: the live web process group's resident memory and CPU time, from /proc. */
function procUsage(pgid: number | null): { memoryBytes: number; cpuNs: number } {
  if (!pgid) return { memoryBytes: 0, cpuNs: 0 };
  let memoryBytes = 0;
  let ticks = 0;
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[2]) !== pgid) continue;
      ticks += Number(f[11]) + Number(f[12]);
      memoryBytes += Number(readFileSync(`/proc/${entry}/statm`, 'utf8').split(' ')[1]) * PAGE;
    } catch {
      // gone meanwhile
    }
  }
  return { memoryBytes, cpuNs: (ticks / CLOCK_TICKS) * 1e9 };
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
