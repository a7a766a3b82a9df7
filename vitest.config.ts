import { defineConfig } from 'vitest/config';
import { SlowestFiles } from './test/helpers/slowest-files';
import { ConsoleScreenshots } from './test/helpers/console-screenshots';
import { SlowestFirst } from './test/helpers/slowest-first';
import { TEST_WORKERS } from './test/helpers/test-workers';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // a GET on a kept-alive connection the edge closed at a reload is sent again, as browsers do
    // and what an earlier file of the same process left running, when its teardown did not run, is stopped
    setupFiles: ['test/helpers/fetch-resend.ts', 'test/helpers/between-files.ts'],
    pool: 'forks',
    // three on a 2-core machine: with two, 42 % of the run's CPU time was idle (test/helpers/test-workers.ts)
    maxWorkers: TEST_WORKERS,
    // each worker process runs its files one after another, loading the modules once: every file's own
    // import (1-3 s) was a fifth of the suite's time. Each file still has its own database, port range,
    // DATA_DIR and task queue (test/helpers/context.ts); module-level state that held a file's resources
    // follows the file (core/metrics.ts reads the last database given, deploy-fixtures counts ports per file)
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
    // the slowest files first (test/durations.json on a clean clone), so that the workers end together
    sequence: { sequencer: SlowestFirst },
    // the default output, then the 10 slowest files and where the console's screenshots are
    reporters: ['default', new SlowestFiles(), new ConsoleScreenshots()],
  },
});
