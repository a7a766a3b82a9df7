import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Reporter } from 'vitest/node';

/**
 * Where the console tests' screenshots go, kept after the run (var/ is not committed; the run's own directory is
 * removed at its end): `1280/<screen>.png` and `390/<screen>.png` for every screen a test shows, `failed/` for
 * the page as it was when a test failed.
 */
export const SCREENSHOTS = join(process.cwd(), 'var', 'console-screenshots');

/** At the end of a run: where the screenshots it took are, and how many (so that they are looked at). */
export class ConsoleScreenshots implements Reporter {
  private started = Date.now();
  onTestRunStart() {
    this.started = Date.now();
  }
  onTestRunEnd() {
    const lines: string[] = [];
    for (const dir of ['1280', '390', 'failed']) {
      let names: string[] = [];
      try {
        names = readdirSync(join(SCREENSHOTS, dir)).filter(
          (n) => n.endsWith('.png') && statSync(join(SCREENSHOTS, dir, n)).mtimeMs >= this.started,
        );
      } catch {
        continue;
      }
      if (names.length > 0) lines.push(`  ${relative(process.cwd(), join(SCREENSHOTS, dir))}/: ${names.length}`);
    }
    if (lines.length > 0) console.log(`\nConsole screenshots taken by this run:\n${lines.join('\n')}\n`);
  }
}
