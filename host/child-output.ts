/**
 * A child process's output as a stream of chunks, for any command a pipeline reads from (tar, pg_dump): not
 * bound to the machine an environment runs on, so activities use it beside the provider.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';

/** Yields a child's stdout, then throws unless it exited 0 (with the end of its stderr). */
export async function* childOutput(child: ChildProcessWithoutNullStreams, what: string): AsyncGenerator<Buffer> {
  let stderr = '';
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
  const exited = once(child, 'close') as Promise<[number | null, string | null]>;
  try {
    for await (const chunk of child.stdout) yield chunk as Buffer;
    const [code, sig] = await exited;
    if (code !== 0)
      throw new Error(`${what} failed (${sig ?? `exit ${code}`}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
