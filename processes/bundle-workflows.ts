// `tsx processes/bundle-workflows.ts FILE`: npm start's bundling child (processes/workflow-bundle.ts). Exit 0 once
// FILE holds the whole bundle; else the reason on stderr and exit 1 (the worker then bundles for itself).
import { writeWorkflowBundle } from './workflow-bundle';

const file = process.argv[2];
if (!file) {
  console.error('usage: tsx processes/bundle-workflows.ts FILE');
  process.exit(2);
}
try {
  await writeWorkflowBundle(file);
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
