/**
 * `service.yaml`: the manifest at the repository root (CONTRACT "The manifest").
 *
 *   build:  [ "npm ci" ]          # run in the release directory when the release is built
 *   deploy: [ "node migrate.js" ] # run before the release goes live (skipped with skip_steps)
 *   web:    "node server.js"      # optional; gets PORT
 *   health: "/healthz"            # optional; must answer 2xx before the release goes live
 *
 * `build` and `deploy` may be left out (they mean "no steps"). Unknown keys and wrong types are refused;
 * every fault is reported, each under its dotted key path, with the line it sits on.
 */
import { type Dir, withDir } from './no-follow';
import path from 'node:path';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { z } from 'zod';

export const MANIFEST_FILE = 'service.yaml';

const command = z.string().trim().min(1);

const manifestSchema = z.strictObject({
  build: z.array(command).default([]),
  deploy: z.array(command).default([]),
  web: command.optional(),
  health: z
    .string()
    .regex(/^\/\S*$/)
    .optional(),
});

export type Manifest = z.output<typeof manifestSchema>;

type ManifestResult = { ok: true; manifest: Manifest } | { ok: false; fields: Record<string, string> };

const emptyManifest = (): Manifest => ({ build: [], deploy: [] });

/** The largest manifest read (pasted or from a commit): a service.yaml is a few lines. */
const MAX_MANIFEST_BYTES = 64 * 1024;
/**
 * Aliases expanded at most when the document is read: a handful is plenty for a manifest, and a
 * "billion laughs" document (aliases of aliases) is refused instead of expanded.
 */
const MAX_ALIAS_COUNT = 50;

type Segment = string | number;

/** Parses and checks the text of a `service.yaml`. An empty document is an empty manifest. */
export function parseManifest(text: string): ManifestResult {
  if (Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) {
    return { ok: false, fields: { manifest: `is larger than ${MAX_MANIFEST_BYTES / 1024} KB` } };
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const lineOf = (offset: number) => lineCounter.linePos(offset).line;

  if (doc.errors.length > 0) {
    const reasons = doc.errors.map((e) => {
      const line = e.linePos?.[0]?.line ?? lineOf(e.pos[0]);
      return `${firstSentence(e.message)} (line ${line})`;
    });
    return { ok: false, fields: { manifest: `invalid YAML: ${reasons.join('; ')}` } };
  }

  const contents = doc.contents;
  if (contents === null || (isScalar(contents) && (contents.value === null || contents.value === undefined))) {
    return { ok: true, manifest: emptyManifest() };
  }
  if (!isMap(contents)) {
    const line = contents.range ? lineOf(contents.range[0]) : 1;
    return { ok: false, fields: { manifest: `expected a mapping of build, deploy, web and health (line ${line})` } };
  }

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    // yaml throws a ReferenceError when aliases expand beyond maxAliasCount (or an alias is unresolved).
    if (!(err instanceof ReferenceError)) throw err;
    return {
      ok: false,
      fields: { manifest: `too many or unresolved aliases (*name): at most ${MAX_ALIAS_COUNT} expansions` },
    };
  }
  const parsed = manifestSchema.safeParse(value);
  if (parsed.success) return { ok: true, manifest: parsed.data };

  const fields: Record<string, string> = {};
  const add = (segments: Segment[], reason: string) => {
    const key = segments.length ? segments.join('.') : 'manifest';
    const line = locate(doc, segments, lineOf);
    const text = line ? `${reason} (line ${line})` : reason;
    fields[key] = fields[key] ? `${fields[key]}; ${text}` : text;
  };

  for (const issue of parsed.error.issues) {
    const at = issue.path.filter((p): p is Segment => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add([...at, key], 'unknown key');
      continue;
    }
    add(at, reasonFor(at));
  }
  return { ok: false, fields };
}

/**
 * Reads `<dir>/service.yaml`. A repository without the file has an empty manifest (no build or deploy
 * steps, no web process): the release is still built and recorded live; the environment then answers
 * 503 "no web process". A file that exists but is invalid is a failure with fields.
 */
export async function readManifest(
  dir: string,
): Promise<ManifestResult & { present: boolean; suggested?: SuggestedManifest | null }> {
  // the tree is the tenant's: read from its descriptor, the file with O_NOFOLLOW (no-follow.ts)
  return withDir(path.dirname(dir), [path.basename(dir)], async (tree) => {
    const st = await tree.lstat(MANIFEST_FILE);
    if (!st) return { ok: true, manifest: emptyManifest(), present: false, suggested: await suggestManifest(tree) };
    const kind: ManifestFileKind = st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : 'other';
    const refused = manifestFileFault(kind);
    if (refused) return { ok: false, fields: refused, present: true };
    let text: string;
    try {
      const fh = await tree.file(MANIFEST_FILE);
      text = await fh.readFile('utf8').finally(() => fh.close());
    } catch {
      // changed between the look and the read: not the regular file of the commit
      return { ok: false, fields: manifestFileFault('other')!, present: true };
    }
    return { ...parseManifest(text), present: true };
  });
}

type ManifestFileKind = 'file' | 'symlink' | 'other';

/** The largest package.json read to tell whether it has a start script. */
const MAX_PACKAGE_JSON_BYTES = 256 * 1024;

/** The lines a repository without service.yaml is told to add. */
type SuggestedManifest = { build: string; web: string };

/**
 * What a repository without service.yaml could add to be served: when its package.json (a regular file of the
 * commit, read without following a link) names a `start` script, `web: "npm start"`, built with `npm ci` where a
 * lockfile is committed (it needs one), else `npm install`. Anything unreadable is null.
 */
async function suggestManifest(tree: Dir): Promise<SuggestedManifest | null> {
  const st = await tree.lstat('package.json');
  if (!st?.isFile() || st.size > MAX_PACKAGE_JSON_BYTES) return null;
  try {
    const fh = await tree.file('package.json');
    const text = await fh.readFile('utf8').finally(() => fh.close());
    const start = (JSON.parse(text) as { scripts?: { start?: unknown } } | null)?.scripts?.start;
    if (typeof start !== 'string' || start.trim() === '') return null;
  } catch {
    return null;
  }
  const locked =
    (await tree.lstat('package-lock.json'))?.isFile() || (await tree.lstat('npm-shrinkwrap.json'))?.isFile();
  return { build: locked ? 'npm ci' : 'npm install', web: 'npm start' };
}

/** What a build's log says of a commit without service.yaml: what it gets, and how to serve it. */
export function absentManifestAdvice(suggested: SuggestedManifest | null | undefined): string {
  const what = `No ${MANIFEST_FILE}: no build or deploy steps, no web process.`;
  return suggested
    ? `${what} package.json has a start script: to serve this app, add a ${MANIFEST_FILE} at the repository root with build: ["${suggested.build}"] and web: "${suggested.web}"`
    : `${what} To serve this app, add a ${MANIFEST_FILE} at the repository root with web: "<the command that starts it>" (it gets PORT)`;
}

/**
 * service.yaml is read only as a regular file of the commit: a symlink could point anywhere on the host
 * (another tenant's files, the console's secrets), so it is refused by name, as is a directory or a submodule.
 */
export function manifestFileFault(kind: ManifestFileKind): Record<string, string> | null {
  if (kind === 'symlink') return { manifest: `${MANIFEST_FILE} is a symlink; it must be a regular file` };
  if (kind === 'other') return { manifest: `${MANIFEST_FILE} is not a regular file` };
  return null;
}

/** One line naming every fault, for task logs: "build.1: expected a string (line 2); colour: unknown key (line 5)". */
export function describeManifestFaults(fields: Record<string, string>): string {
  return Object.entries(fields)
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
}

function reasonFor(at: Segment[]): string {
  const [key, index] = at;
  if (key === 'build' || key === 'deploy') {
    return index === undefined ? 'expected an array of strings' : 'expected a non-empty string';
  }
  if (key === 'web') return 'expected a non-empty string';
  if (key === 'health') return "expected a path starting with '/', such as /healthz";
  return 'invalid value';
}

function firstSentence(message: string): string {
  return message
    .split('\n')[0]
    .replace(/ at line \d+, column \d+:?$/, '')
    .trim();
}

/** Line of the node at `segments` (its value, or its key when the value is empty). */
function locate(doc: Document, segments: Segment[], lineOf: (offset: number) => number): number | undefined {
  let node: unknown = doc.contents;
  let line = (node as Node | null)?.range ? lineOf((node as Node).range![0]) : undefined;
  for (const segment of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) return line;
      const keyNode = pair.key as Node;
      if (keyNode.range) line = lineOf(keyNode.range[0]);
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      node = node.items[segment];
    } else {
      return line;
    }
    const range = (node as Node | null)?.range;
    if (range) line = lineOf(range[0]);
  }
  return line;
}
