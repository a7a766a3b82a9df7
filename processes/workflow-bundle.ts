/**
 * The workflows' bundle (webpack, Temporal's bundleWorkflowCode): what a worker loads into its workflow
 * sandboxes. Bundling takes seconds of CPU, so it is done once and shared: npm start bundles while PostgreSQL
 * and Temporal start, into its run directory, and gives the file to its worker (VC_WORKFLOW_BUNDLE_PATH), whose
 * supervised restarts load it again instead of bundling; the tests bundle once per run.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const WORKFLOWS_PATH = join(root, 'workflows', 'index.ts');
/** The workflow interceptors, bundled with the workflows (a prebuilt bundle holds them already). */
const INTERCEPTORS_PATH = join(root, 'workflows', 'interceptors.ts');

const quietBundlerLogger = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => console.warn(m),
  error: (m: string) => console.error(m),
  log: () => undefined,
};

/** Bundles the workflow code (webpack). */
export async function bundleWorkflows(): Promise<{ code: string }> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: [INTERCEPTORS_PATH],
    logger: quietBundlerLogger,
  });
}

/** Bundles into `file`, whole or not at all (written aside, then renamed). */
export async function writeWorkflowBundle(file: string): Promise<void> {
  const { code } = await bundleWorkflows();
  const aside = `${file}.${process.pid}.tmp`;
  writeFileSync(aside, code, { mode: 0o600 });
  renameSync(aside, file);
}
