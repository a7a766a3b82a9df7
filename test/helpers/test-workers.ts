/**
 * How many vitest workers a run has, and each worker's port ranges. vitest.config.ts reads the count; the test
 * context (context.ts) gives each file the ranges of the worker that runs it.
 *
 * VC_TEST_WORKERS (2 or 3, the default): the workers of one run. Each worker runs its files one after another. Three
 * on a 2-core machine: with two, 42 % of the CPU sat idle while the files waited (Temporal's dispatch, the apps' boots,
 * the edge's reloads), and the run took 794 s against 625 s. A fourth found no idle CPU left: 589 s there, every file
 * slower; on a slower machine 1,535 s against 1,288-1,445 s with three, 12 tests failing on their time limits, and
 * role-walk.test.ts's 141 environments past a range of 130 ports. docs/benchmarks.md, "The test suite's time".
 *
 * VC_TEST_PORT_SLOT (0-17) moves a whole run to ranges of its own, for runs side by side on one host (separate
 * checkouts); each worker of a run takes one of the slot's ranges.
 */
export const TEST_WORKERS = Math.min(3, Math.max(2, Number(process.env.VC_TEST_WORKERS) || 3));

const SLOTS = 18;

export function testPortSlot(): number {
  return Math.min(SLOTS - 1, Math.max(0, Number(process.env.VC_TEST_PORT_SLOT) || 0));
}

/** Worker `pool`'s place among every worker of every slot: 0 to SLOTS * TEST_WORKERS - 1 (at most 53). */
export function workerIndex(pool: number): number {
  return testPortSlot() * TEST_WORKERS + ((pool - 1) % TEST_WORKERS);
}

/**
 * The ENVIRONMENT_PORTS and INSTANCE_PORTS of worker `pool` (VITEST_POOL_ID, 1-based) in the run's slot.
 * Environment ports lie in 21000-30999, below the kernel's ephemeral range (32768-60999): a port the edge must
 * listen on is never a web process's internal port or a connection's local port. Instance ports (where the edge
 * reaches its instances, forwarded by nft on 127.0.0.1) lie in 62000-65419, above it: files side by side never
 * forward each other's ports (their hosts share one name, so one nft table). With 2 workers a range holds 270
 * environment ports and 95 instance ports; with 3, 180 and 63. 31000-32767 stays for the fixed INSTANCE_PORTS of
 * the files that start more hosts (hosts.test.ts, two-hosts.ts, second-host.ts): an INSTANCE_PORTS that
 * overlaps ENVIRONMENT_PORTS is refused (system/config.ts).
 */
export function workerPortRanges(pool: number): {
  environment: { from: number; to: number };
  instance: { from: number; to: number };
} {
  const index = workerIndex(pool);
  const environmentSize = Math.floor(10_000 / (SLOTS * TEST_WORKERS) / 10) * 10;
  const instanceSize = Math.floor(3_420 / (SLOTS * TEST_WORKERS));
  const environment = 21_000 + index * environmentSize;
  const instance = 62_000 + index * instanceSize;
  return {
    environment: { from: environment, to: environment + environmentSize - 1 },
    instance: { from: instance, to: instance + instanceSize - 1 },
  };
}
