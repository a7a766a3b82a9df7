import { execFileSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { copyTree, Dir, removeTree, withDir } from '../../../host/no-follow';

/**
 * The one way root reaches into a tree a tenant can change (docs/isolation.md): names from a directory
 * descriptor, never following a link the tenant planted, never waiting on its FIFO, owners and modes set
 * through the descriptor, whole-tree commands run from the descriptor.
 */
const base = mkdtempSync(join(tmpdir(), 'vc-nofollow-'));
const tree = join(base, 'tree');
const victim = join(base, 'victim');
const TENANT = 100_000 + 4242;

beforeEach(() => {
  rmSync(tree, { recursive: true, force: true });
  rmSync(victim, { recursive: true, force: true });
  mkdirSync(join(tree, 'sub'), { recursive: true });
  writeFileSync(join(tree, 'sub', 'file'), 'tenant data');
  mkdirSync(victim, { mode: 0o755 });
  writeFileSync(join(victim, 'keep'), 'root data', { mode: 0o644 });
  symlinkSync(victim, join(tree, 'link'));
  execFileSync('mkfifo', [join(tree, 'fifo')]);
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('Dir', () => {
  it('refuses a symlink where a directory or a file is opened, and a FIFO without waiting on it', async () => {
    await withDir(base, ['tree'], async (dir) => {
      await expect(dir.dir('link')).rejects.toMatchObject({ code: expect.stringMatching(/ELOOP|ENOTDIR/) });
      await expect(dir.file('link')).rejects.toMatchObject({ code: 'ELOOP' });
      await expect(dir.file('fifo')).rejects.toMatchObject({ code: 'ENOTREG' });
      await expect(dir.dir('link', { create: 0o700 })).rejects.toBeTruthy();
      expect(lstatSync(join(tree, 'link')).isSymbolicLink()).toBe(true);
    });
    await expect(Dir.open(base, 'tree', 'link')).rejects.toBeTruthy();
    await expect(Dir.openReal(join(tree, 'link'))).rejects.toBeTruthy();
  });

  it('never writes through a link: a new file over a planted link is refused, the target untouched', async () => {
    symlinkSync(join(victim, 'planted'), join(tree, 'new'));
    await withDir(base, ['tree'], async (dir) => {
      await expect(dir.writeNew('new', 'secret')).rejects.toMatchObject({ code: 'EEXIST' });
      await dir.writeNew('fresh', 'ok', 0o640);
    });
    expect(existsSync(join(victim, 'planted'))).toBe(false);
    expect(statSync(join(tree, 'fresh')).mode & 0o777).toBe(0o640);
  });

  it('removes a link, not what it names; a whole tree with links in it, not their targets', async () => {
    await withDir(base, ['tree'], (dir) => dir.remove('link'));
    expect(existsSync(join(tree, 'link'))).toBe(false);
    expect(readFileSync(join(victim, 'keep'), 'utf8')).toBe('root data');
    symlinkSync(victim, join(tree, 'sub', 'inner'));
    await removeTree(base, 'tree');
    expect(existsSync(tree)).toBe(false);
    expect(readFileSync(join(victim, 'keep'), 'utf8')).toBe('root data');
  });

  it('gives a tree to a uid from its descriptor: links inside are not followed', async () => {
    await withDir(base, ['tree'], async (dir) => {
      await dir.chownTree(TENANT, TENANT);
      await dir.chmod(0o700);
    });
    expect(statSync(join(tree, 'sub', 'file')).uid).toBe(TENANT);
    expect(statSync(tree).mode & 0o777).toBe(0o700);
    expect(statSync(victim).uid).toBe(0);
    expect(statSync(join(victim, 'keep')).uid).toBe(0);
  });

  it('copies a tree as it is (owners, modes, links kept as links)', async () => {
    chownSync(join(tree, 'sub', 'file'), TENANT, TENANT);
    rmSync(join(tree, 'fifo'));
    const copy = join(base, 'copy');
    rmSync(copy, { recursive: true, force: true });
    await withDir(base, [], async (parent) => {
      const from = await parent.dir('tree');
      const to = await parent.dir('copy', { create: 0o700 });
      try {
        await copyTree(from, to);
      } finally {
        await from.close();
        await to.close();
      }
    });
    expect(readlinkSync(join(copy, 'link'))).toBe(victim);
    expect(statSync(join(copy, 'sub', 'file')).uid).toBe(TENANT);
    expect(readFileSync(join(copy, 'sub', 'file'), 'utf8')).toBe('tenant data');
  });
});
