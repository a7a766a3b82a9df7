import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

export interface WorkflowBundleAhead {
  /** VC_WORKFLOW_BUNDLE_PATH for the worker: the bundle once `done`, or missing when bundling failed. */
  file: string;
  /** Resolves when the bundling child has ended, well or not (never rejects). */
  done: Promise<void>;
  /** Stops the bundling child, if it still runs. */
  stop(): void;
}

/**
 * The workflows' bundle, made once per start of npm start or npm run host by a child
 * (processes/bundle-workflows.ts), while the rest starts: the worker loads it, and so does every supervised
 * restart of the worker, instead of bundling (seconds of CPU) each time. A bundle a previous start left is
 * removed first: the code may have changed since. When bundling fails, `file` stays missing and the worker
 * bundles for itself (worker-runtime.ts). A given VC_WORKFLOW_BUNDLE_PATH (the tests' run's bundle) is used as it is.
 */
export function bundleAhead(o: { root: string; runDir: string; say: (m: string) => void }): WorkflowBundleAhead {
  const given = process.env.VC_WORKFLOW_BUNDLE_PATH;
  if (given) return { file: given, done: Promise.resolve(), stop: () => undefined };
  const file = join(o.runDir, 'workflow-bundle.js');
  rmSync(file, { force: true });
  const child = spawn(process.execPath, ['--import', 'tsx', join(o.root, 'processes', 'bundle-workflows.ts'), file], {
    cwd: o.root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stopped = false;
  let errors = '';
  child.stderr?.on('data', (d: Buffer) => (errors += d));
  const done = new Promise<void>((resolve) => {
    child.once('error', (err) => {
      o.say(`Could not bundle the workflows ahead (${err.message}); the worker bundles them itself.`);
      resolve();
    });
    child.once('exit', (code, signal) => {
      if (code !== 0 && !stopped)
        o.say(
          `Could not bundle the workflows ahead (${signal ?? `exit ${code}`}: ${errors.trim().slice(-500)}); ` +
            'the worker bundles them itself.',
        );
      resolve();
    });
  });
  return {
    file,
    done,
    stop() {
      stopped = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
