/**
 * host/traversable.ts: the one walk up the directories that says whether other users (an environment's uid,
 * HAProxy's and Varnish's users) can pass through to a path: the sandboxes, the volumes, the settings check at
 * start and the edge's data plane all use it.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertTraversable, closedAbove, closedAboveSync } from '../../host/traversable';

const root = mkdtempSync(path.join(os.tmpdir(), 'vc-traversable-'));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

function tree(...modes: number[]): string {
  let d = mkdtempSync(path.join(root, 't-'));
  chmodSync(d, 0o755);
  for (const [i, mode] of modes.entries()) {
    d = path.join(d, `d${i}`);
    mkdirSync(d);
    chmodSync(d, mode);
  }
  return d;
}

describe('closedAbove', () => {
  it('finds the first directory above a path that others may not pass through, with its mode', async () => {
    const leaf = tree(0o755, 0o750, 0o711, 0o700);
    const closedDir = path.dirname(path.dirname(leaf));
    expect(await closedAbove(leaf)).toEqual({ dir: closedDir, mode: 0o750 });
    expect(closedAboveSync(leaf)).toEqual({ dir: closedDir, mode: 0o750 });
  });

  it('looks at the path itself only when asked (self)', async () => {
    const leaf = tree(0o755, 0o700);
    expect(await closedAbove(leaf)).toBeNull();
    expect(await closedAbove(leaf, { self: true })).toEqual({ dir: leaf, mode: 0o700 });
    expect(closedAboveSync(leaf, { self: true })).toEqual({ dir: leaf, mode: 0o700 });
  });

  it('skips directories not made yet (their parent decides)', async () => {
    const leaf = tree(0o711);
    expect(await closedAbove(path.join(leaf, 'later', 'still-later'))).toBeNull();
    const closedLeaf = tree(0o700);
    expect(closedAboveSync(path.join(closedLeaf, 'later', 'x'))).toEqual({ dir: closedLeaf, mode: 0o700 });
  });

  it('judges a symbolic link by the directory it leads to, as the kernel does', async () => {
    const target = tree(0o700);
    const link = path.join(tree(0o755), 'link');
    symlinkSync(target, link);
    expect(await closedAbove(path.join(link, 'inside'))).toEqual({ dir: link, mode: 0o700 });
  });

  it('assertTraversable says which directory, why it matters and what to do', async () => {
    const leaf = tree(0o750, 0o755);
    await expect(
      assertTraversable(path.join(leaf, 'home'), 'environments under it cannot be sandboxed'),
    ).rejects.toThrow(
      `${path.dirname(leaf)} does not let other users through (mode 750): environments under it cannot be sandboxed; chmod o+x it`,
    );
    await expect(assertTraversable(path.join(tree(0o711, 0o755), 'home'), 'x')).resolves.toBeUndefined();
  });
});
