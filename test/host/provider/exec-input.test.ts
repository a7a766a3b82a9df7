/**
 * A command fed on its stdin that is gone before its input is written (failed at once, or stopped with its process
 * group, as `kill -TERM -<pgid>` does to a worker and its nft) ends by its exit: the write's EPIPE on its stdin
 * does not end this process (deploy-worker-crash.test.ts's stopped worker exited with code 1 on it).
 */
import { describe, expect, it } from 'vitest';
import { ExecInputError, execWithInput, nft } from '../../../host/provider/exec-input';

// more than a pipe holds (64 KiB), so the write is still going when the command has exited
const input = 'x'.repeat(1 << 20);

describe('execWithInput', () => {
  it('resolves by the exit of a command that read none of its input', async () => {
    await expect(execWithInput('true', [], input)).resolves.toBe('');
  });

  it('rejects with the stderr of a command stopped by a signal before it read its input', async () => {
    const err = await execWithInput('sh', ['-c', 'echo stopping >&2; kill -TERM $$'], input).catch((e) => e);
    expect(err).toBeInstanceOf(ExecInputError);
    expect((err as ExecInputError).stderr).toBe('stopping\n');
  });

  it('hands the input to a command that reads it, and its output back', async () => {
    await expect(execWithInput('wc', ['-c'], input)).resolves.toBe(`${1 << 20}\n`);
  });
});

describe('nft', () => {
  it("names nft's own complaint when rules are refused", async () => {
    await expect(nft('this is not a rule\n')).rejects.toThrow(/^nft failed: .*syntax error/s);
  });
});
