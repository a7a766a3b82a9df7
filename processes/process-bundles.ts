/**
 * The console's own processes, bundled (esbuild): what the supervisor starts (processes/start-children.ts) runs as
 * one JavaScript file under plain `node` instead of TypeScript through tsx's loader. tsx's hooks run for every
 * module the process loads, its dependencies' included: a worker process spent ~1.9 s of CPU on its imports
 * that way, ~0.95 s bundled (docs/benchmarks.md "The console's processes bundled"). The suite starts ~125 such processes;
 * npm start's supervisor starts one again on every crash, so a restart heals sooner too.
 *
 * Like the workflows' bundle (workflow-bundle.ts), the bundles are made once per start, from the checkout's
 * sources, and handed to the children (VC_PROCESS_BUNDLES: a JSON map from the script to its bundle); a given
 * VC_PROCESS_BUNDLES (the tests' run's) is used as it is. A bundle is named by its content's digest, so runs side by
 * side never write over each other's; bundles unused for a week are removed. They lie under the checkout's
 * node_modules/.cache, where their dependencies (left outside: `packages: 'external'`) resolve from.
 *
 * In a bundle, `import.meta.url` is still each source file's own URL (a file finds its neighbours: migrations,
 * the price list, the console's files). Stack traces name the sources (`--enable-source-maps`). A process that
 * runs migrations (start.ts, migrate.ts: knex imports them as TypeScript) stays under tsx.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { ownUrls, writeWhole } from '../scripts/entry-bundles.mjs';

/** The scripts the supervisors start that run bundled. */
const BUNDLED_SCRIPTS = ['processes/worker.ts', 'processes/api.ts', 'processes/edge.ts', 'processes/shipper.ts'];

const KEEP_MS = 7 * 86_400_000;

/** A script's bundle name: `processes/worker.ts` -> `worker`. */
const nameOf = (script: string) => script.replace(/^processes\//, '').replace(/\.ts$/, '');

type ProcessBundles = Record<string, string>;

/** The bundles a parent handed down (VC_PROCESS_BUNDLES), each file there; null when none or one is missing. */
export function givenProcessBundles(env: NodeJS.ProcessEnv = process.env): ProcessBundles | null {
  const raw = env.VC_PROCESS_BUNDLES;
  if (!raw) return null;
  try {
    const map = JSON.parse(raw) as ProcessBundles;
    return BUNDLED_SCRIPTS.every((s) => typeof map[s] === 'string' && existsSync(map[s])) ? map : null;
  } catch {
    return null;
  }
}

/** How node runs `script`: its bundle when there is one, else the TypeScript through tsx. */
export function nodeArgs(root: string, script: string, bundles: ProcessBundles | null): string[] {
  const bundle = bundles?.[script];
  return bundle ? ['--enable-source-maps', bundle] : ['--import', 'tsx', join(root, script)];
}

/** Bundles BUNDLED_SCRIPTS of the checkout at `root`; the given ones (VC_PROCESS_BUNDLES) when they are there. */
export async function processBundles(root: string): Promise<ProcessBundles> {
  const given = givenProcessBundles();
  if (given) return given;
  const { build } = await import('esbuild');
  const dir = join(root, 'node_modules', '.cache', 'vc-console', 'processes');
  mkdirSync(dir, { recursive: true });
  prune(dir);
  const result = await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(BUNDLED_SCRIPTS.map((s) => [nameOf(s), s])),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    write: false,
    outdir: dir,
    logLevel: 'silent',
    plugins: [ownUrls],
  });
  const bundles: ProcessBundles = {};
  const files = new Map(result.outputFiles.map((f) => [f.path, f]));
  for (const script of BUNDLED_SCRIPTS) {
    const name = nameOf(script);
    const code = files.get(join(dir, `${name}.js`));
    const map = files.get(join(dir, `${name}.js.map`));
    if (!code || !map) throw new Error(`esbuild made no bundle of ${script}`);
    const digest = createHash('sha256').update(code.contents).digest('hex').slice(0, 16);
    const file = join(dir, `${name}-${digest}.mjs`);
    if (existsSync(file)) {
      const now = new Date();
      for (const f of [file, `${file}.map`]) utimesSync(f, now, now);
    } else {
      // the map first, then the code that names it, each whole or not at all
      const text = code.text.replace(
        /\/\/# sourceMappingURL=.*\s*$/,
        `//# sourceMappingURL=${name}-${digest}.mjs.map\n`,
      );
      writeWhole(`${file}.map`, map.contents);
      writeWhole(file, text);
    }
    bundles[script] = file;
  }
  return bundles;
}

/**
 * Begins the bundles at once (they are made while PostgreSQL and Temporal start); resolves to the children's
 * VC_PROCESS_BUNDLES, or to nothing when they could not be made: the children then run through tsx, as said.
 */
export async function processBundlesAhead(root: string, say: (m: string) => void): Promise<NodeJS.ProcessEnv> {
  try {
    return { VC_PROCESS_BUNDLES: JSON.stringify(await processBundles(root)) };
  } catch (err) {
    say(`Could not bundle the console's processes (${(err as Error).message}); they run their TypeScript through tsx.`);
    return {};
  }
}

/** Removes bundles (and maps, and leftovers of a write) not used for a week. */
function prune(dir: string): void {
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    try {
      if (Date.now() - statSync(file).mtimeMs > KEEP_MS) rmSync(file, { force: true });
    } catch {
      // gone meanwhile
    }
  }
}
