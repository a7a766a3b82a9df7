/**
 * A child process's end, and its output as a stream of chunks, for any command a pipeline reads from (tar,
 * pg_dump): not bound to the machine an environment runs on, so activities use it beside the provider.
 */
import type { ChildProcess, ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';

/**
 * The child's exit code and signal once it closed. A spawn that failed (no such command, no permission, no memory
 * for a new process: ENOENT, EACCES, EAGAIN) is an 'error', not an exit: the promise rejects with it, naming
 * `what`. It is marked handled at once, since callers await it only after reading the child's streams: a rejection
 * nobody had awaited yet would end this process (Node's unhandled rejection), not the task.
 */
export function closed(child: ChildProcess, what: string): Promise<[number | null, string | null]> {
  const ended = (once(child, 'close') as Promise<[number | null, string | null]>).catch((err: Error) => {
    throw new Error(`${what} could not be started: ${err.message}`);
  });
  ended.catch(() => undefined);
  return ended;
}

/**
 * Resolves once the child runs; rejects, naming `what`, when it could not be started (ENOENT, EACCES, EAGAIN under
 * memory pressure). Its 'error' stays listened to, so that one (or a later one, a failed kill) never ends this
 * process as an 'error' event nobody listened to.
 */
export function started(child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.on('error', (err) => reject(new Error(`${what} could not be started: ${err.message}`)));
  });
}

/** Yields a child's stdout, then throws unless it exited 0 (with the end of its stderr). */
export async function* childOutput(child: ChildProcessWithoutNullStreams, what: string): AsyncGenerator<Buffer> {
  let stderr = '';
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
  const exited = closed(child, what);
  try {
    for await (const chunk of child.stdout) yield chunk as Buffer;
    const [code, sig] = await exited;
    if (code !== 0)
      throw new Error(`${what} failed (${sig ?? `exit ${code}`}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
