/**
 * The resource sampler of the local provider: every RESOURCE_SAMPLE_SECONDS the worker writes one sample per
 * environment placed on its host (servers.host): CPU (percent of one core, averaged since the previous sample), memory (bytes) and disk (bytes
 * of the environment's directories on this host). CPU and memory come from the environment's cgroup
 * (the provider's `usage`: host/provider/usage.ts), disk from its directories. Samples are rows of
 * resource_samples.
 */
import type { Deps } from '../../system/deps';
import { environmentsSampledOn, insertSamples, type SampleRow } from '../../db/queries/resources';
import { environmentVolume } from '../../db/queries/storage';
import type { Provider } from '../../host/provider';

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
  provider: Provider,
  opts: { intervalSeconds: number },
): ResourceSampler {
  const last = new Map<string, Reading>();
  let running: Promise<number> | null = null;

  const round = async (): Promise<number> => {
    // the environments of this host (those with no host recorded too): another host samples its own
    const envs: Array<{ id: string }> = await environmentsSampledOn(deps.knex, deps.config.hostName);
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    const rows: SampleRow[] = [];
    const dirs: Array<{ envDir: string; volume: string }> = [];
    for (const { id } of envs) {
      const nowNs = process.hrtime.bigint();
      const usage = provider.usage(id);
      const prev = last.get(id);
      last.set(id, { cpuNs: usage.cpuNs, atNs: nowNs });
      const cpu =
        prev && usage.cpuNs >= prev.cpuNs ? ((usage.cpuNs - prev.cpuNs) / Number(nowNs - prev.atNs)) * 100 : 0;
      const volume = await environmentVolume(deps.knex, deps.config.storageRoots, id);
      dirs.push({ envDir: provider.environmentDir(id), volume });
      rows.push({
        environment_id: id,
        at,
        cpu: Math.round(cpu * 100) / 100,
        memory_bytes: usage.memoryBytes,
        disk_bytes: 0,
        volume_bytes: 0,
      });
    }
    // every environment's directories at once (one du): its directory (releases, HOME) and its volume, which
    // lives under a root of STORAGE_ROOTS and counts only when it holds something
    const bytes = await provider.diskBytesOf(
      dirs.flatMap((d) => [{ dir: d.envDir }, { dir: d.volume, content: true }]),
    );
    for (const [i, d] of dirs.entries()) {
      const volumeBytes = bytes.get(d.volume) ?? 0;
      rows[i].disk_bytes = (bytes.get(d.envDir) ?? 0) + volumeBytes;
      rows[i].volume_bytes = volumeBytes;
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
