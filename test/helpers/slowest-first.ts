import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files' recorded times (seconds, import and tests) of a whole run, committed: test/durations.json under the
 * project's root. The slowest-first order starts from them on a clean clone, which has no vitest cache yet.
 */
const durationsFile = (root: string) => join(root, 'test', 'durations.json');

function recorded(root: string): Record<string, number> {
  if (!existsSync(durationsFile(root))) return {};
  try {
    return JSON.parse(readFileSync(durationsFile(root), 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

/**
 * Writes the times of a run's files into test/durations.json (VC_RECORD_TEST_DURATIONS=1 npm test): seconds, one
 * decimal, by name so that a new recording's diff shows what changed; the files the run left out keep theirs,
 * and files gone from the tree are dropped.
 */
export function recordDurations(root: string, files: ReadonlyArray<{ file: string; total: number }>): void {
  const merged: Record<string, number> = recorded(root);
  for (const f of files) merged[f.file] = Math.round(f.total / 100) / 10;
  const kept = Object.keys(merged)
    .filter((file) => existsSync(join(root, file)))
    .sort();
  writeFileSync(
    durationsFile(root),
    `${JSON.stringify(Object.fromEntries(kept.map((f) => [f, merged[f]])), null, 2)}\n`,
  );
}

/**
 * The slowest files first, so that the workers end together instead of one running a 2-minute file alone at
 * the end: each file's time from this checkout's last run of it (vitest's cache), else from test/durations.json;
 * a file known to neither (a new one) counts as the median of the known ones. Ties: the larger file first.
 */
export class SlowestFirst extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const committed = recorded(root);
    const known = (spec: TestSpecification): number | undefined => {
      const file = relative(root, spec.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${file}`)?.duration;
      return cached !== undefined && cached > 0 ? cached / 1000 : committed[file];
    };
    const times = files.map(known).filter((s): s is number => s !== undefined);
    times.sort((a, b) => a - b);
    const median = times.length > 0 ? times[Math.floor(times.length / 2)] : 0;
    const seconds = (spec: TestSpecification) => known(spec) ?? median;
    const size = (spec: TestSpecification): number =>
      this.ctx.cache.getFileStats(`${spec.project.name}:${relative(root, spec.moduleId)}`)?.size ?? 0;
    const keyed = files.map((spec) => ({ spec, seconds: seconds(spec), size: size(spec) }));
    keyed.sort((a, b) => b.seconds - a.seconds || b.size - a.size);
    return keyed.map((k) => k.spec);
  }
}
