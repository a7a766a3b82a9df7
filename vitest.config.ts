import { defineConfig } from 'vitest/config';
import { SlowestFiles } from './test/helpers/slowest-files';
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
    // the transformed modules kept on disk between runs (node_modules/.experimental-vitest-cache; `npx vitest
    // --clearCache` empties it): a warm run's files import in about half the time (route-table.test.ts: import
    // 5.4 s to 2.3 s, transform 3.3 s to 0.7 s). A clean clone's first run fills it.
    experimental: { fsModuleCache: true },
    // the default output, then the 10 slowest files
    reporters: ['default', new SlowestFiles()],
  },
});
