import { linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { diskBytesOf } from '../../../host/provider/usage';

// The resource sampler measures every environment's directories of a round with one du (usage.ts).
describe('diskBytesOf', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'vc-du-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('gives each directory its own bytes from one du; missing ones and empty `content` ones are 0', async () => {
    const a = path.join(root, 'a');
    const b = path.join(root, 'b');
    const empty = path.join(root, 'empty');
    for (const d of [a, b, empty]) mkdirSync(d);
    writeFileSync(path.join(a, 'f'), Buffer.alloc(50_000, 1));
    writeFileSync(path.join(b, 'g'), Buffer.alloc(7_000, 2));
    const missing = path.join(root, 'missing');
    const bytes = await diskBytesOf([
      { dir: a },
      { dir: b, content: true },
      { dir: empty, content: true },
      { dir: missing },
    ]);
    expect(bytes.get(a)).toBeGreaterThanOrEqual(50_000);
    expect(bytes.get(a)).toBeLessThan(60_000);
    expect(bytes.get(b)).toBeGreaterThanOrEqual(7_000);
    expect(bytes.get(b)).toBeLessThan(20_000);
    expect(bytes.get(empty)).toBe(0);
    expect(bytes.get(missing)).toBe(0);
    // an empty directory measured as a whole (not `content`) still counts its own entry, as du does
    expect((await diskBytesOf([{ dir: empty }])).get(empty)).toBeGreaterThan(0);
  });

  it('counts a file with links in two of the directories once, in the first', async () => {
    const c = path.join(root, 'c');
    const d = path.join(root, 'd');
    mkdirSync(c);
    mkdirSync(d);
    writeFileSync(path.join(c, 'f'), Buffer.alloc(40_000, 3));
    linkSync(path.join(c, 'f'), path.join(d, 'f'));
    const bytes = await diskBytesOf([{ dir: c }, { dir: d }]);
    expect(bytes.get(c)).toBeGreaterThanOrEqual(40_000);
    expect(bytes.get(d)).toBeLessThan(40_000);
  });
});
