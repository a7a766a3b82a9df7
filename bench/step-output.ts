import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { printTable } from './harness';

/**
 * Memory of the worker's step-output reader against one long line (issue 16, item 6): a step printing
 * BENCH_LINE_MB (default 20, to keep `npm run bench` short: the old reader copies the growing line on every chunk;
 * the figure is BENCH_LINE_MB=60) MB without a newline. Each reader runs in a process of its own
 * (bench/step-output-child.ts) and reports its peak RSS: `cut` (pipeLines: lines cut at MAX_LINE while read)
 * against `joined` (the reader before: chunks joined until the newline), in the same run.
 * Target: the cut reader's peak stays within a few MB of an idle process, whatever the line's length.
 * Measured here (60 MB): cut 0.5 s, peak 78 MB (idle: 74-80 MB); joined 167 s, peak 967 MB.
 */
const MB = Number(process.env.BENCH_LINE_MB ?? 20);

function runChild(reader: 'cut' | 'joined', mb: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname ?? '.', 'step-output-child.ts')],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, BENCH_READER: reader, BENCH_MB: String(mb) },
      },
    );
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${reader} exited ${code}`)),
    );
  });
}

export async function run() {
  const rows: Array<Record<string, string | number>> = [];
  for (const mb of [0, MB]) {
    for (const reader of ['cut', 'joined'] as const) {
      const r = await runChild(reader, mb);
      rows.push({
        reader,
        'line (MB)': mb,
        seconds: r.seconds.toFixed(2),
        'lines passed on': r.lines,
        'longest (chars)': r.longest,
        'peak RSS (MB)': (r.maxRss / 1024 / 1024).toFixed(0),
      });
    }
  }
  printTable(`Step output: one line of ${MB} MB without a newline`, rows);
}
