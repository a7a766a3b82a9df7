/**
 * Commands fed on their stdin (`nft -f -`, a network's `sh` script). A command may be gone before its input is
 * written: it failed at once, or it was stopped with its process group, as Ctrl-C, systemd's stop and
 * `kill -TERM -<pgid>` do. The write then fails with EPIPE on the child's stdin, an 'error' event that, left
 * unhandled, ends the whole process. Its exit says how it went, so the write's own error is dropped here.
 */
import { execFile } from 'node:child_process';

/** The command's failure, with what it said on stderr. */
export class ExecInputError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** Runs `cmd` with `input` on its stdin; resolves with its stdout, rejects (ExecInputError) on a failed exit. */
export function execWithInput(cmd: string, args: string[], input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, (err, stdout, stderr) =>
      err ? reject(new ExecInputError(err.message, String(stderr))) : resolve(String(stdout)),
    );
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}

/** Applies `rules` with `nft -f -` in this process's network namespace. */
export async function nft(rules: string): Promise<void> {
  await execWithInput('nft', ['-f', '-'], rules).catch((err: ExecInputError) => {
    throw new Error(`nft failed: ${(err.stderr || err.message).trim()}`);
  });
}
