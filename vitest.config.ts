import { defineConfig } from 'vitest/config';
import { SlowestFiles } from './test/helpers/slowest-files';
import { ConsoleScreenshots } from './test/helpers/console-screenshots';
import { SlowestFirst } from './test/helpers/slowest-first';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // a GET on a kept-alive connection the edge closed at a reload is sent again, as browsers do
    setupFiles: ['test/helpers/fetch-resend.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 60_000,
    // the slowest files first (test/durations.json on a clean clone), so that both workers end together
    sequence: { sequencer: SlowestFirst },
    // the default output, then the 10 slowest files and where the console's screenshots are
    reporters: ['default', new SlowestFiles(), new ConsoleScreenshots()],
  },
});
