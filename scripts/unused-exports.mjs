#!/usr/bin/env node
// `npm run check`: fails on an export no other file imports (one only its own file uses, or none): such a name is
// the file's own, and exporting it hides it from the unused-code lint. Reads tsconfig.json's files (and the
// scripts' .mjs), resolves every import, re-export and dynamic import, and lists the exports nobody imports.
// Entry points loaded by name from outside TypeScript's view are not counted: see ENTRY below.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * Modules whose exports are loaded by name, not imported: the workflows and their interceptors (registered by the
 * worker's bundle), test files and vitest's setup modules, the benches, the configs, the console's own build.
 */
const ENTRY = [
  /^workflows\/(index|interceptors)\.ts$/,
  /\.test\.ts$/,
  /^test\/helpers\/(global-setup|fetch-resend)\.ts$/,
  /^vitest\.config\.ts$/,
  /^console\/vite\.config\.ts$/,
  /^scripts\/[^/]+\.(ts|mjs)$/,
  /^cli\/bin\.mjs$/,
  // the client's entry, imported by its path through its bundle (scripts/entry-bundles.mjs)
  /^cli\/main\.ts$/,
  /^bench\/index\.ts$/,
  /^db\/migrations\//,
];

const config = ts.getParsedCommandLineOfConfigFile(
  join(root, 'tsconfig.json'),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
);
const files = [
  ...config.fileNames,
  ...ts.sys.readDirectory(join(root, 'scripts'), ['.mjs']),
  // not in tsconfig.json's list, and importing from it
  ...ts.sys.readDirectory(join(root, 'logs'), ['.ts']),
  join(root, 'cli', 'bin.mjs'),
].filter((f) => !f.includes('/node_modules/'));
const host = ts.createCompilerHost(config.options);
const resolve = (spec, from) => ts.resolveModuleName(spec, from, config.options, host).resolvedModule?.resolvedFileName;

/** file -> its exported names; file -> names imported from it by other files ('*': all). */
const exported = new Map();
const imported = new Map();
const use = (file, name) => {
  if (!file || file.includes('/node_modules/')) return;
  if (!imported.has(file)) imported.set(file, new Set());
  imported.get(file).add(name);
};
const has = (node, kind) => ts.getModifiers?.(node)?.some((m) => m.kind === kind) ?? false;

for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const names = [];
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const target = resolve(node.moduleSpecifier.text, file);
      const clause = node.importClause;
      if (!clause) use(target, '*');
      else {
        if (clause.name) use(target, 'default');
        const b = clause.namedBindings;
        if (b && ts.isNamespaceImport(b)) use(target, '*');
        if (b && ts.isNamedImports(b)) for (const e of b.elements) use(target, (e.propertyName ?? e.name).text);
      }
    } else if (ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        const target = resolve(node.moduleSpecifier.text, file);
        if (!node.exportClause || ts.isNamespaceExport(node.exportClause)) use(target, '*');
        else for (const e of node.exportClause.elements) use(target, (e.propertyName ?? e.name).text);
      }
      if (node.exportClause && ts.isNamedExports(node.exportClause))
        for (const e of node.exportClause.elements) names.push([e.name.text, e]);
    } else if (ts.isExportAssignment(node)) names.push(['default', node]);
    else if (
      (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) ||
      (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument))
    ) {
      const arg = ts.isCallExpression(node) ? node.arguments[0] : node.argument.literal;
      if (arg && ts.isStringLiteralLike(arg)) use(resolve(arg.text, file), '*');
    }
    if (node.parent === source && has(node, ts.SyntaxKind.ExportKeyword)) {
      const name = has(node, ts.SyntaxKind.DefaultKeyword) ? 'default' : undefined;
      if (ts.isVariableStatement(node))
        for (const d of node.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push([d.name.text, d]);
      if (node.name && ts.isIdentifier(node.name)) names.push([name ?? node.name.text, node]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  // how often the name occurs in its own file: once is its declaration alone (nothing uses it at all)
  const count = (n) =>
    text.match(new RegExp(`(?<![\\w$])(?<![^.]\\.)${n.replace(/\$/g, '\\$')}(?![\\w$])`, 'g'))?.length ?? 0;
  exported.set(
    file,
    names.map(([n, node]) => [
      n,
      source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      n !== 'default' && count(n) <= 1,
    ]),
  );
}

const unusedAtAll = [];
const ownOnly = [];
for (const [file, names] of exported) {
  const rel = relative(root, file);
  if (ENTRY.some((r) => r.test(rel))) continue;
  const used = imported.get(file) ?? new Set();
  if (used.has('*')) continue;
  for (const [name, line, dead] of names)
    if (!used.has(name)) (dead ? unusedAtAll : ownOnly).push({ at: `${rel}:${line}`, key: `${rel} ${name}`, name });
}

/**
 * The exports no other file imported when this check came (issue 29): each is taken off the list when it is fixed
 * (`--write-baseline` rewrites it), and the check fails on any other.
 */
const baselineFile = join(root, 'scripts', 'unused-exports-baseline.txt');
const baseline = new Set(
  readFileSync(baselineFile, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#')),
);
if (process.argv.includes('--write-baseline')) {
  const head =
    '# scripts/unused-exports.mjs: exports no other file imports, left from before the check. Shrink only.\n';
  writeFileSync(baselineFile, head + [...unusedAtAll, ...ownOnly].map((u) => `${u.key}\n`).join(''));
}
const fresh = (list) => list.filter((u) => !baseline.has(u.key));
const failing = [...fresh(unusedAtAll), ...fresh(ownOnly)];
if (failing.length) {
  console.error(`${failing.length} export(s) no other file imports:`);
  for (const u of fresh(unusedAtAll)) console.error(`  ${u.at} ${u.name}: used nowhere; delete it`);
  for (const u of fresh(ownOnly)) console.error(`  ${u.at} ${u.name}: only its own file uses it; drop \`export\``);
  process.exit(1);
}
const left = unusedAtAll.length + ownOnly.length;
console.error(`No new export that no other file imports (${left} left of the baseline).`);
