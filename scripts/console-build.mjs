// Builds the web console (console/ -> console/dist, with Vite) when its files are missing or older than
// their sources, saying so. Used by `npm start`, `npm test` and `npm run bench` (scripts/bootstrap.mjs),
// and by the browser tests' helper when vitest runs directly.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const consoleDir = join(root, 'console');
export const consoleDist = join(consoleDir, 'dist');

function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const entry of readdirSync(path)) max = Math.max(max, newest(join(path, entry)));
  return max;
}

/** Why the console needs building, or undefined when its built files are newer than every source. */
export function consoleBuildReason() {
  const built = join(consoleDist, 'index.html');
  if (!existsSync(built)) return 'its files are missing';
  // db/vocabulary.ts: the console imports the task registry's labels from it.
  const sources = [
    join(consoleDir, 'src'),
    join(consoleDir, 'index.html'),
    join(consoleDir, 'public'),
    join(consoleDir, 'vite.config.ts'),
    join(root, 'db', 'vocabulary.ts'),
  ];
  const lock = join(root, 'package-lock.json');
  if (existsSync(lock)) sources.push(lock);
  const sourceTime = Math.max(...sources.filter((s) => existsSync(s)).map(newest));
  return sourceTime > statSync(built).mtimeMs ? 'its sources changed since the last build' : undefined;
}

/** Builds console/dist when needed; `say` tells what happens. Throws when the build fails. */
export function ensureConsoleAssets(say = (m) => console.error(m)) {
  const reason = consoleBuildReason();
  if (!reason) return false;
  say(`Building the web console (vite build; ${reason})...`);
  const r = spawnSync(join(root, 'node_modules', '.bin', 'vite'), ['build', '-c', join(consoleDir, 'vite.config.ts')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error('The web console did not build; see the output above.');
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--force')) {
    const r = spawnSync(
      join(root, 'node_modules', '.bin', 'vite'),
      ['build', '-c', join(consoleDir, 'vite.config.ts')],
      {
        cwd: root,
        stdio: 'inherit',
      },
    );
    process.exit(r.status ?? 1);
  }
  ensureConsoleAssets((m) => console.error(`[console] ${m}`));
}
