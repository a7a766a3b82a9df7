import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { givenProcessBundles, nodeArgs, processBundles } from '../../processes/process-bundles';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe("the supervisors' children, bundled (processes/process-bundles.ts)", () => {
  it('makes one file per process, named by its content: the same sources give the same files', async () => {
    const given = process.env.VC_PROCESS_BUNDLES;
    delete process.env.VC_PROCESS_BUNDLES;
    try {
      const first = await processBundles(root);
      expect(Object.keys(first).sort()).toEqual([
        'processes/api.ts',
        'processes/edge.ts',
        'processes/shipper.ts',
        'processes/worker.ts',
      ]);
      for (const file of Object.values(first)) {
        expect(file).toMatch(/\/node_modules\/\.cache\/vc-console\/processes\/\w+-[0-9a-f]{16}\.mjs$/);
        expect(existsSync(`${file}.map`)).toBe(true);
      }
      expect(await processBundles(root)).toEqual(first);
      // each source file keeps its own import.meta.url: the migrations are found beside db/migrate.ts
      expect(readFileSync(first['processes/worker.ts'], 'utf8')).not.toContain('import.meta.url');
    } finally {
      if (given) process.env.VC_PROCESS_BUNDLES = given;
    }
  });

  it("runs a bundle under plain node, its errors' stack traces naming the TypeScript sources", () => {
    const bundles = JSON.parse(inject('processBundles'));
    const args = nodeArgs(root, 'processes/api.ts', bundles);
    expect(args).toEqual(['--enable-source-maps', bundles['processes/api.ts']]);
    // a setting the API refuses at start: it says which, and exits
    const run = spawnSync(process.execPath, args, {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: 'postgres://127.0.0.1:1/x', PORT: 'many' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('PORT');
    expect(run.stderr).toMatch(/system\/config[\w-]*\.ts:\d+/);
  });

  it('falls back to the TypeScript through tsx without bundles, and takes none that are missing', () => {
    expect(nodeArgs(root, 'processes/api.ts', null)).toEqual(['--import', 'tsx', path.join(root, 'processes/api.ts')]);
    expect(
      givenProcessBundles({ VC_PROCESS_BUNDLES: JSON.stringify({ 'processes/api.ts': '/nowhere.mjs' }) }),
    ).toBeNull();
    expect(givenProcessBundles({ VC_PROCESS_BUNDLES: 'not json' })).toBeNull();
    expect(givenProcessBundles({ VC_PROCESS_BUNDLES: inject('processBundles') })).toEqual(
      JSON.parse(inject('processBundles')),
    );
  });
});
