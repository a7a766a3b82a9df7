/**
 * The commands run as cached bundles (scripts/entry-bundles.mjs: the `service` client, `npm run hosts`): a changed
 * source is in the next run, what is imported lazily stays lazy, each file keeps its own import.meta.url, and
 * without a place for the bundle the TypeScript runs through tsx.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entryBundles = pathToFileURL(path.join(root, 'scripts/entry-bundles.mjs')).href;

/** A checkout of its own: tool.ts, the part it imports, and one it imports only when asked. */
function checkout(): string {
  const dir = mkdtempSync(path.join(inject('runDir'), 'entry-'));
  writeFileSync(path.join(dir, 'package.json'), '{"type": "module"}'); // as the real checkout's
  writeFileSync(
    path.join(dir, 'tool.ts'),
    `import { word } from './part.ts';
export const answer = (): string => word;
export const lazily = async (): Promise<string> => (await import('./later.ts')).later;
export const own = import.meta.url;`,
  );
  writeFileSync(path.join(dir, 'part.ts'), `export const word: string = 'one';`);
  writeFileSync(path.join(dir, 'later.ts'), `export const later: string = 'later';`);
  return dir;
}

/** Runs tool.ts of `dir` through importEntry in a new node process: what it answers. */
function run(dir: string): { answer: string; lazily: string; own: string } {
  const r = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { importEntry } = await import(${JSON.stringify(entryBundles)});
const m = await importEntry(${JSON.stringify(dir)}, 'tool.ts');
console.log(JSON.stringify({ answer: m.answer(), lazily: await m.lazily(), own: m.own }));`,
    ],
    { cwd: root, encoding: 'utf8', timeout: 30_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const cache = (dir: string) => path.join(dir, 'node_modules/.cache/vc-console/entries');
const manifest = (dir: string) => JSON.parse(readFileSync(path.join(cache(dir), 'tool.ts.json'), 'utf8'));

describe('commands bundled (scripts/entry-bundles.mjs)', () => {
  it('runs the bundle it made, and makes it again when a source in it changes, by size or by time', () => {
    const dir = checkout();
    expect(run(dir)).toEqual({ answer: 'one', lazily: 'later', own: pathToFileURL(path.join(dir, 'tool.ts')).href });
    const first = manifest(dir);
    expect(first.bundle).toMatch(/\/entries\/tool-[0-9a-f]{16}\/entry\.mjs$/);
    expect(Object.keys(first.inputs).sort()).toEqual(['later.ts', 'part.ts', 'tool.ts'].map((f) => path.join(dir, f)));
    // the lazy import is a chunk of its own, not in the entry's file
    expect(readdirSync(path.dirname(first.bundle)).filter((f) => /^chunk-\w+\.mjs$/.test(f))).toHaveLength(1);
    expect(readFileSync(first.bundle, 'utf8')).not.toContain("'later'");

    // unchanged: the same bundle, not made again
    const made = statSync(first.bundle).mtimeMs;
    expect(run(dir).answer).toBe('one');
    expect(manifest(dir).bundle).toBe(first.bundle);
    expect(statSync(first.bundle).mtimeMs).toBe(made);

    writeFileSync(path.join(dir, 'part.ts'), `export const word: string = 'three';`);
    expect(run(dir).answer).toBe('three');
    const second = manifest(dir).bundle;
    expect(second).not.toBe(first.bundle);

    // the same size, written later
    writeFileSync(path.join(dir, 'part.ts'), `export const word: string = 'seven';`);
    const later = new Date(Date.now() + 5_000);
    utimesSync(path.join(dir, 'part.ts'), later, later);
    expect(run(dir).answer).toBe('seven');
    expect(manifest(dir).bundle).not.toBe(second);
  });

  it('runs the TypeScript through tsx where no bundle can be kept', () => {
    const dir = checkout();
    writeFileSync(path.join(dir, 'node_modules'), 'a file where the cache would go');
    expect(run(dir)).toEqual({ answer: 'one', lazily: 'later', own: pathToFileURL(path.join(dir, 'tool.ts')).href });
  });

  it('the service client and `npm run hosts` run from their bundles', () => {
    const help = spawnSync(process.execPath, [path.join(root, 'cli/bin.mjs'), '--help'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: service');
    const hosts = spawnSync(process.execPath, [path.join(root, 'scripts/bootstrap.mjs'), 'hosts', '--', '--help'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(hosts.status, hosts.stderr).toBe(0);
    expect(hosts.stdout).toContain('Usage:');
    for (const entry of ['cli/main.ts', 'processes/hosts.ts']) {
      const m = JSON.parse(
        readFileSync(
          path.join(root, 'node_modules/.cache/vc-console/entries', `${entry.replace('/', '-')}.json`),
          'utf8',
        ),
      );
      expect(Object.keys(m.inputs)).toContain(path.join(root, entry));
      expect(statSync(m.bundle).isFile()).toBe(true);
    }
  });
});
