/**
 * Tables with two users get one module (issue 29, docs/architecture.md "Tables"): a table that code in two
 * top-level folders outside db/ reaches with `knex('table')` (or `trx('table')`, `deps.knex('table')`) belongs
 * in a db/queries module, with its row type and its NOTIFY channel, and those folders call that module.
 *
 * The check lists each (table, folder) where a folder names a table some other folder outside db/ names too.
 * The pairs left from before the check are in scripts/shared-tables-baseline.txt (`--write-baseline` rewrites
 * it); it only shrinks. A new pair fails `npm run check`, naming the files.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const FOLDERS = ['api', 'activities', 'cli', 'core', 'edge', 'host', 'logs', 'processes', 'system', 'workflows'];
// a knex call on a table name: knex('t'), trx('t'), deps.knex('t'), o.knex('t'), tx('t'), knex('t as x'),
// knex({ x: 't' })
const CALL =
  /\b(?:knex|trx|tx)\(\s*(?:'([a-z_][a-z0-9_]*)(?:\s+as\s+[a-z_]+)?'|\{\s*[a-z_]+:\s*'([a-z_][a-z0-9_]*)'\s*\})\s*\)/g;

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* files(p);
    else if (p.endsWith('.ts')) yield p;
  }
}

/** table -> folder -> files naming it */
const uses = new Map();
for (const folder of FOLDERS) {
  for (const file of files(join(root, folder))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(CALL)) {
      const table = m[1] ?? m[2];
      const byFolder = uses.get(table) ?? new Map();
      uses.set(table, byFolder);
      const set = byFolder.get(folder) ?? new Set();
      byFolder.set(folder, set);
      set.add(relative(root, file));
    }
  }
}

const pairs = [];
for (const [table, byFolder] of uses) {
  if (byFolder.size < 2) continue;
  for (const [folder, where] of byFolder) pairs.push({ key: `${table} ${folder}`, where: [...where].sort() });
}
pairs.sort((a, b) => (a.key < b.key ? -1 : 1));

const baselineFile = join(root, 'scripts', 'shared-tables-baseline.txt');
if (process.argv.includes('--write-baseline')) {
  const head =
    '# scripts/shared-tables.mjs: tables that two folders outside db/ query directly, left from before the check.\n' +
    '# "table folder" each; shrink only (move the queries into db/queries).\n';
  writeFileSync(baselineFile, head + pairs.map((p) => `${p.key}\n`).join(''));
}
const baseline = new Set(
  readFileSync(baselineFile, 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#')),
);
const fresh = pairs.filter((p) => !baseline.has(p.key));
if (fresh.length > 0) {
  console.error(`${fresh.length} table(s) queried directly by a second folder outside db/:`);
  for (const p of fresh) console.error(`  ${p.key}: ${p.where.join(', ')}`);
  console.error('Put the queries in a db/queries module for the table and call it from both folders.');
  process.exit(1);
}
const tables = new Set(pairs.map((p) => p.key.split(' ')[0]));
console.error(`No new table shared outside db/ (${tables.size} tables, ${pairs.length} pairs left of the baseline).`);
