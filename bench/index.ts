import { DefaultLogger, Runtime } from '@temporalio/worker';

// Workers run in this process: their runtime logs warnings only, as the worker process does.
Runtime.install({ logger: new DefaultLogger('WARN') });
// `npm run bench`: every benchmark, each measuring its baseline in the same run.
// `npm run bench -- environments` runs one by name.
const benches: Record<string, () => Promise<{ run: () => Promise<unknown> }>> = {
  environments: () => import('./environments'),
  credentials: () => import('./credentials'),
  deploys: () => import('./deploys'),
  golive: () => import('./golive'),
  hosts: () => import('./hosts'),
  edge: () => import('./edge'),
  'edge-variants': () => import('./edge/variants'),
  shipper: () => import('./edge/shipper'),
  cdn: () => import('./edge/cdn'),
  logs: () => import('./logs'),
  resources: () => import('./resources'),
  backups: () => import('./backups'),
  'step-output': () => import('./step-output'),
  console: () => import('./console'),
  pitr: () => import('./pitr'),
};

// `--quick` (bench/quick.ts): each for a second or two, as CI runs them.
const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));
for (const [name, load] of Object.entries(benches)) {
  if (only.length && !only.includes(name)) continue;
  const mod = await load();
  await mod.run();
}
process.exit(0);
