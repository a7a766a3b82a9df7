/**
 * One build step's output read by the worker's reader, in a process of its own so that the bench can see this
 * process's memory alone. BENCH_READER: `cut` (pipeLines of host/provider/run-step.ts) or `joined` (the
 * reader before issue 16: chunks joined until a newline). BENCH_MB: how many MB the step prints without a
 * newline. Prints one JSON line: seconds, the lines passed on, the longest line, and this process's peak RSS.
 */
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { pipeLines } from '../host/provider/run-step';

const mb = Number(process.env.BENCH_MB ?? 60);
const reader = process.env.BENCH_READER === 'joined' ? joined : pipeLines;
const lines: number[] = [];
const began = performance.now();
const child = spawn('sh', ['-c', `head -c ${mb * 1024 * 1024} /dev/zero | tr '\\0' x; echo; echo done`], {
  stdio: ['ignore', 'pipe', 'ignore'],
});
await new Promise<void>((resolve) => reader(child.stdout, 'stdout', (_s, l) => lines.push(l.length), resolve));
const seconds = (performance.now() - began) / 1000;
process.stdout.write(
  `${JSON.stringify({ seconds, lines: lines.length, longest: Math.max(...lines), maxRss: process.resourceUsage().maxRSS * 1024 })}\n`,
);

/** The reader before issue 16, for the baseline: a line is held whole until its newline. */
function joined(stream: Readable, _n: 'stdout', onLine: (s: 'stdout', l: string) => void, done: () => void) {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  stream.on('data', (chunk: Buffer) => {
    const parts = (partial + decoder.write(chunk)).split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) onLine('stdout', l);
  });
  stream.on('end', () => {
    if (partial) onLine('stdout', partial);
    done();
  });
}
