/**
 * The layers (docs/architecture.md "Layers") are held by Biome: `noRestrictedImports` overrides per folder in
 * biome.json and the GritQL plugin for the workflows' type-only imports. This lints probe files, laid out
 * like the repository, with the repository's own configuration, so that a rule that stops refusing fails here.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

/** [the importing file, the import, refused?] */
const PROBES: Array<[string, string, boolean]> = [
  ['api/a/service.ts', "import { x } from '../../activities/data/index';", true],
  ['api/a/service.ts', "import type { x } from '../../activities/data/index';", true],
  ['api/a/service.ts', "import { x } from '../../core/tasks';", false],
  ['api/a/service.ts', "import { x } from '../../host/git';", false],
  ['activities/a/index.ts', "import { x } from '../../api/lib/policy';", true],
  ['activities/a/index.ts', "import { x } from '../../core/pricing';", false],
  ['activities/a/index.ts', "import { x } from '../../workflows/deploys-shared';", true],
  ['activities/a/index.ts', "import type { x } from '../../workflows/task-runner';", true],
  ['activities/a/index.ts', "import { x } from '../../db/workflow-names';", false],
  ['activities/a/index.ts', "import { x } from '../../host/provider/volume';", true],
  ['activities/a/index.ts', "import type { x } from '../../host/provider/sandbox';", true],
  ['activities/a/index.ts', "import { x } from '../../host/provider';", false],
  ['activities/a/index.ts', "import type { x } from '../../host/provider/index';", false],
  ['activities/a/index.ts', "import { x } from '../../host/child-output';", false],
  ['core/a.ts', "import { x } from '../api/lib/policy';", true],
  ['core/a.ts', "import { x } from '../activities/data/index';", true],
  ['core/a.ts', "import { x } from '../workflows/task-runner';", true],
  ['core/a.ts', "import { x } from '../workflows';", true],
  ['core/a.ts', "export { x } from '../workflows/data';", true],
  ['core/a.ts', "import type * as x from '../workflows';", false],
  ['core/a.ts', "import { x } from '../workflows/deploys-shared';", true],
  ['core/a.ts', "import { x } from '../db/workflow-names';", false],
  ['core/a.ts', "import { x } from '../host/outbound';", false],
  ['host/a.ts', "import { x } from '../core/tasks';", true],
  ['host/a.ts', "import { x } from '../db/knex';", false],
  ['db/queries/a.ts', "import { x } from '../../api/lib/dns';", true],
  ['db/queries/a.ts', "import { x } from '../../core/dns';", true],
  ['db/queries/a.ts', "import type { x } from '../../host/git-remote';", true],
  ['db/migrations/999_a.ts', "import { x } from '../../host/git-remote';", true],
  ['db/queries/a.ts', "import { x } from '../../system/crypto';", false],
  ['edge/a.ts', "import { x } from '../api/lib/cidr';", true],
  ['edge/a.ts', "import { x } from '../activities/deploys/index';", true],
  ['edge/a.ts', "import { x } from '../core/cidr';", false],
  ['edge/server.ts', "import { x } from '../activities/machines/sampler';", true],
  ['edge/tunnel.ts', "import { x } from '../host/provider/sandbox';", false],
  ['logs/a.ts', "import { x } from '../activities/storage/index';", true],
  ['logs/a.ts', "import { x } from '../host/outbound';", false],
  ['logs/error-tail.ts', "import { x } from '../activities/deploys/index';", true],
  ['host/provider/a.ts', "import { x } from '../../logs/error-tail';", true],
  ['host/provider/a.ts', "import { x } from '../../activities/toolkit/index';", true],
  ['host/provider/a.ts', "import { x } from '../../core/errors';", true],
  ['host/provider/a.ts', "import { x } from '../../db/queries/machines';", false],
  ['host/provider/a.ts', "import { x } from '../environment-dir';", false],
  ['workflows/a.ts', "import { x } from '../activities/cdn';", true],
  ['workflows/a.ts', "import { type x } from '../activities/cdn';", true],
  ['workflows/a.ts', "export { x } from '../activities/cdn';", true],
  ['workflows/a.ts', "import type { x } from '../activities/cdn';", false],
  ['workflows/a.ts', "export type { x } from '../activities/cdn';", false],
  ['workflows/a.ts', "import { x } from '../core/tasks';", true],
  ['workflows/a.ts', "import type { x } from '../db/vocabulary';", false],
  ['api/a/service.ts', "import { x } from '../../processes/api-server';", true],
  ['activities/a/index.ts', "import { x } from '../../processes/worker-runtime';", true],
  ['core/a.ts', "import { x } from '../processes/temporal';", true],
  ['host/a.ts', "import { x } from '../processes/supervision';", true],
  ['db/queries/a.ts', "import { x } from '../../processes/start-children';", true],
  ['edge/a.ts', "import { x } from '../processes/edge';", true],
  ['logs/a.ts', "import { x } from '../processes/supervision';", true],
  ['workflows/a.ts', "import type { x } from '../processes/worker-runtime';", true],
  ['system/a.ts', "import { x } from '../processes/supervision';", true],
  ['system/mail/a.ts', "import { x } from '../../processes/start';", true],
  ['cli/a.ts', "import { x } from '../processes/api';", true],
  ['cli/a.ts', "import { x } from '../system/config';", false],
  ['system/a.ts', "import { x } from '../db/knex';", true],
  ['system/a.ts', "import type { x } from '../api/middleware/authenticate';", true],
  ['system/a.ts', "import { x } from '../api/middleware/guards';", true],
  ['system/a.ts', "import { x } from '../core/worker-readiness';", true],
  ['system/a.ts', "import { x } from '../host/outbound';", true],
  ['system/a.ts', "import { x } from '../activities/index';", true],
  ['system/a.ts', "import type { x } from '../workflows/deploys-shared';", true],
  ['system/a.ts', "import { x } from '../cli/client';", true],
  ['system/mail/a.ts', "import type { x } from '../../db/models/worker-heartbeat';", true],
  ['system/a.ts', "import { x } from './config';", false],
  ['system/mail/a.ts', "import { x } from '../logger';", false],
  ['system/a.ts', "import { x } from 'knex';", false],
  ['processes/a.ts', "import { x } from '../api/app';", false],
  ['processes/a.ts', "import { x } from '../activities/index';", false],
  ['processes/a.ts', "import { x } from '../system/config';", false],
  ['bench/a.ts', "import { x } from '../processes/api-server';", false],
  ['test/a/a.test.ts', "import { x } from '../../processes/supervision';", false],
];

let dir: string;
/** Per probe, the layer diagnostics Biome gave its file. */
const found: string[][] = PROBES.map(() => []);

/** Lints every probe: each in its own file (named as the probe says when the name matters), in as few trees as needed. */
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'vc-layers-'));
  const trees = new Map<number, Map<string, number>>();
  PROBES.forEach(([file, line], n) => {
    const path =
      file.endsWith('/tunnel.ts') || file.endsWith('/error-tail.ts') ? file : join(dirname(file), `p${n}.ts`);
    let t = 0;
    while (trees.get(t)?.has(path)) t++;
    if (!trees.has(t)) trees.set(t, new Map());
    trees.get(t)!.set(path, n);
    const base = join(dir, `t${t}`);
    mkdirSync(join(base, dirname(path)), { recursive: true });
    const use = line.startsWith('export')
      ? ''
      : line.includes('type')
        ? 'export type Y = x;\n'
        : 'export const y = x;\n';
    writeFileSync(join(base, path), `${line}\n${use}`);
  });
  for (const [t, files] of trees) {
    const base = join(dir, `t${t}`);
    mkdirSync(join(base, 'scripts'), { recursive: true });
    cpSync(join(root, 'biome.json'), join(base, 'biome.json'));
    for (const grit of ['workflows-type-imports.grit', 'core-workflows-type-imports.grit'])
      cpSync(join(root, 'scripts', grit), join(base, 'scripts', grit));
    let out: string;
    try {
      out = execFileSync(join(root, 'node_modules', '.bin', 'biome'), ['lint', '--reporter=json', '.'], {
        cwd: base,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    } catch (err) {
      out = (err as { stdout: string }).stdout;
    }
    const report = JSON.parse(out) as {
      diagnostics: Array<{ category?: string; message: string; location?: { path?: string } }>;
    };
    for (const d of report.diagnostics) {
      if (d.category !== 'lint/style/noRestrictedImports' && d.category !== 'plugin') continue;
      const n = files.get(d.location?.path ?? '');
      if (n !== undefined) found[n].push(d.message);
    }
  }
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the layers, as Biome holds them', () => {
  PROBES.forEach(([file, line, shouldRefuse], n) => {
    it(`${shouldRefuse ? 'refuses' : 'allows'} in ${file}: ${line}`, () => {
      if (shouldRefuse) expect(found[n], 'no layer diagnostic').not.toHaveLength(0);
      else expect(found[n]).toEqual([]);
    });
  });
});

/** Every .ts/.tsx/.mjs file under dir, skipping installed and built trees. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory())
      return ['node_modules', 'dist', '.git', 'var'].includes(e.name) ? [] : sourceFiles(join(dir, e.name));
    return /\.(ts|tsx|mjs)$/.test(e.name) ? [join(dir, e.name)] : [];
  });
}

/** Each relative import of a file, with the path it resolves to. */
function relativeImports(file: string): Array<{ spec: string; target: string }> {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => ({
    spec: m[1],
    target: resolve(dirname(file), m[1]),
  }));
}

const within = (target: string, folder: string) => target === folder || target.startsWith(folder + '/');

describe('processes/, the entry points npm start runs, on top', () => {
  it('is imported by no folder of the repository but test/ and bench/', () => {
    const processes = join(root, 'processes');
    const above = new Set(['test', 'bench', 'processes', 'node_modules']);
    const offenders: string[] = [];
    for (const top of readdirSync(root, { withFileTypes: true })) {
      if (!top.isDirectory() || above.has(top.name) || top.name.startsWith('.')) continue;
      for (const file of sourceFiles(join(root, top.name)))
        for (const { spec, target } of relativeImports(file))
          if (within(target, processes)) offenders.push(`${relative(root, file)} -> ${spec}`);
    }
    expect(offenders).toEqual([]);
  });
});

describe('system/, the foundation, at the bottom', () => {
  it('imports no folder of the repository but itself', () => {
    const system = join(root, 'system');
    const offenders = sourceFiles(system).flatMap((file) =>
      relativeImports(file)
        .filter(({ target }) => !within(target, system))
        .map(({ spec }) => `${relative(root, file)} -> ${spec}`),
    );
    expect(offenders).toEqual([]);
  });
});

describe('api/lib/, the library of every area', () => {
  it('imports no area of api/ (the router is given what it answers tasks with)', () => {
    const lib = join(root, 'api', 'lib');
    const api = join(root, 'api');
    const offenders = sourceFiles(lib).flatMap((file) =>
      relativeImports(file)
        .filter(({ target }) => within(target, api) && !within(target, lib))
        .map(({ spec }) => `${relative(root, file)} -> ${spec}`),
    );
    expect(offenders).toEqual([]);
  });
});
