/**
 * `npm run bench -- --quick`: every benchmark runs its cases for a second or two, with small data sets, so
 * that CI (.ci/run) checks that each one still runs. Its figures mean nothing; targets need the full run.
 * (bench/pitr.ts: a 20 MB tenant database beside nine of 20 MB, writes for 5 s, one pgbench round of 2 s each way.)
 */
export const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';

/** The full run's value, or the quick run's. */
export const sized = <T>(full: T, quick: T): T => (QUICK ? quick : full);
