import { relative } from 'node:path';
import type { Reporter, TestModule, Vitest } from 'vitest/node';
import { recordDurations } from './slowest-first';

/**
 * A reporter beside the default one: at the end of each run, the 10 slowest test files, each with its total
 * (import and tests) and how much of it was importing, so the suite's time is seen where it is spent. With
 * VC_RECORD_TEST_DURATIONS=1, the run's files' times also go into test/durations.json, the order a clean
 * clone's run starts from (test/helpers/slowest-first.ts).
 */
export class SlowestFiles implements Reporter {
  private root = process.cwd();

  onInit(vitest: Vitest) {
    this.root = vitest.config.root;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const files = testModules.map((m) => {
      const d = m.diagnostic();
      const importing = d.prepareDuration + d.environmentSetupDuration + d.setupDuration + d.collectDuration;
      return { file: relative(this.root, m.moduleId), total: importing + d.duration, importing };
    });
    if (files.length === 0) return;
    if (process.env.VC_RECORD_TEST_DURATIONS === '1') recordDurations(this.root, files);
    files.sort((a, b) => b.total - a.total);
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`.padStart(7);
    const lines = files
      .slice(0, 10)
      .map((f) => `  ${seconds(f.total)}  (import ${seconds(f.importing).trim()})  ${f.file}`);
    console.log(`\nThe ${lines.length} slowest test files:\n${lines.join('\n')}\n`);
  }
}
