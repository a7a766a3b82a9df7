/**
 * A TypeScript entry point imported as one esbuild bundle under plain node, for the commands a person or a script
 * runs again and again: the `service` client (cli/bin.mjs), `npm run hosts` and `npm run keys`
 * (scripts/bootstrap.mjs; `npm run host` still runs through tsx). tsx's hooks run for every module a process loads; `service --help` took 722 ms of
 * CPU that way and 172 ms bundled (docs/benchmarks.md, "Where this machine's CPU goes, and commands bundled").
 *
 * The bundle is cached under the checkout's node_modules/.cache/vc-console/entries, where its dependencies (left
 * outside: `packages: 'external'`) resolve from, with the list of the source files it holds and each one's size and
 * modification time. A command uses the bundle while every one of them is as it was, and makes it again from the
 * sources otherwise: there is no build step, and no copy that could drift from the source. Where it cannot be made
 * (no esbuild, a read-only directory), the entry runs through tsx as before.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** An esbuild plugin: each source file's `import.meta.url` (and `dirname`) stays its own, as a bundle holds many. */
export const ownUrls = {
  name: 'own-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('import.meta')) return { contents: source, loader: 'ts' };
      const url = pathToFileURL(args.path).href;
      return {
        contents: source
          .replaceAll('import.meta.url', JSON.stringify(url))
          .replaceAll('import.meta.dirname', JSON.stringify(join(args.path, '..'))),
        loader: 'ts',
      };
    });
  },
};

/** Writes a file whole or not at all (a reader beside never sees half of it). */
export function writeWhole(file, contents) {
  const aside = `${file}.${process.pid}.tmp`;
  writeFileSync(aside, contents);
  renameSync(aside, file);
}

const stamp = (file) => {
  const s = statSync(file);
  return `${s.size}:${s.mtimeMs}`;
};

/** The cached bundle of `entry` when every source in it is as it was when it was made; else null. */
function cached(manifestFile) {
  try {
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
    for (const [file, was] of Object.entries(manifest.inputs)) if (stamp(file) !== was) return null;
    statSync(manifest.bundle);
    return manifest.bundle;
  } catch {
    return null;
  }
}

function readPrevious(manifestFile) {
  try {
    const { bundle } = JSON.parse(readFileSync(manifestFile, 'utf8'));
    statSync(bundle);
    return bundle;
  } catch {
    return null;
  }
}

async function bundle(root, entry, dir, manifestFile) {
  const { build } = await import('esbuild');
  const name = entry.replace(/\.ts$/, '').replaceAll('/', '-');
  const staging = join(dir, 'staging');
  const result = await build({
    absWorkingDir: root,
    entryPoints: { entry },
    bundle: true,
    // what the entry imports only when it needs it (`await import(...)`) is a chunk of its own, loaded then, with
    // the packages it uses: a bundle in one file would load them all at its start
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // maps beside them, read only where source maps are on (`NODE_OPTIONS=--enable-source-maps`)
    sourcemap: 'linked',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunk-[hash]',
    write: false,
    metafile: true,
    outdir: staging,
    logLevel: 'silent',
    plugins: [ownUrls],
  });
  // a directory named by what it holds; the maps and chunks first, the entry that imports them last
  const digest = createHash('sha256');
  for (const f of result.outputFiles) digest.update(f.path).update(f.contents);
  const out = join(dir, `${name}-${digest.digest('hex').slice(0, 16)}`);
  mkdirSync(out, { recursive: true });
  const order = (f) => (f.path.endsWith('.map') ? 0 : f.path === join(staging, 'entry.mjs') ? 2 : 1);
  for (const f of [...result.outputFiles].sort((a, b) => order(a) - order(b)))
    writeWhole(join(out, relative(staging, f.path)), f.contents);
  const inputs = {};
  for (const input of Object.keys(result.metafile.inputs)) {
    const path = join(root, input);
    inputs[path] = stamp(path);
  }
  const file = join(out, 'entry.mjs');
  const previous = readPrevious(manifestFile);
  writeWhole(manifestFile, JSON.stringify({ bundle: file, inputs }));
  // the bundle made before from older sources, once no command can be about to load it
  if (previous && previous !== file && Date.now() - statSync(previous).mtimeMs > 60_000)
    rmSync(dirname(previous), { recursive: true, force: true });
  return file;
}

/**
 * Imports the TypeScript module `entry` (a path under `root`, the checkout) from its bundle, made or checked as
 * above; through tsx when no bundle can be made. Answers the module's exports.
 */
export async function importEntry(root, entry) {
  const dir = join(root, 'node_modules', '.cache', 'vc-console', 'entries');
  const manifestFile = join(dir, `${entry.replaceAll('/', '-')}.json`);
  let file = cached(manifestFile);
  if (!file) {
    try {
      mkdirSync(dir, { recursive: true });
      file = await bundle(root, entry, dir, manifestFile);
    } catch {
      const { register } = await import('tsx/esm/api');
      register();
      return import(pathToFileURL(join(root, entry)).href);
    }
  }
  return import(pathToFileURL(file).href);
}

/** The checkout a script of this folder belongs to. */
export const checkoutRoot = dirname(dirname(fileURLToPath(import.meta.url)));
