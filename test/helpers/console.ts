/**
 * The web console's built files for the tests (console/dist): built when missing or older than their
 * sources, as `npm test` does (scripts/console-build.mjs), so a vitest run started directly has them too.
 */
// @ts-expect-error plain JS module shared with scripts/bootstrap.mjs
import { ensureConsoleAssets } from '../../scripts/console-build.mjs';

let built = false;

export function ensureConsoleBuilt(): void {
  if (built) return;
  ensureConsoleAssets((m: string) => console.log(`[console] ${m}`));
  built = true;
}
