import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { MAX_LINE, pipeLines, processAlive, runStep } from '../../../host/provider/run-step';

const env = { PATH: process.env.PATH, HOME: process.env.HOME };

describe('runStep', () => {
  it('streams stdout and stderr line by line as they are printed, partial last line included', async () => {
    // the step waits for a file that the test writes only once "one" has reached it, and for a second one once
    // "two" has: a step whose lines came at its end would wait out its timeout (no clock involved, so a loaded
    // machine cannot fail it). The second gate also orders stderr's line before stdout's last: the two are
    // separate pipes, and without it a loaded machine may read stdout's end before stderr's line (a CI run did)
    const dir = mkdtempSync(join(os.tmpdir(), 'run-step-'));
    const gate = join(dir, 'gate');
    const gate2 = join(dir, 'gate2');
    const seen: string[] = [];
    try {
      const r = await runStep({
        command: `echo one; while [ ! -e '${gate}' ]; do sleep 0.02; done; echo two >&2; while [ ! -e '${gate2}' ]; do sleep 0.02; done; printf "three"`,
        cwd: os.tmpdir(),
        env,
        timeoutMs: 10_000,
        onLine: (stream, line) => {
          seen.push(`${stream}:${line}`);
          if (line === 'one') writeFileSync(gate, '');
          if (line === 'two') writeFileSync(gate2, '');
        },
      });
      expect(r).toEqual({ exitCode: 0, signal: null, timedOut: false, cancelled: false });
      expect(seen).toEqual(['stdout:one', 'stderr:two', 'stdout:three']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports the exit code and runs with the given env and cwd', async () => {
    const lines: string[] = [];
    const r = await runStep({
      command: 'echo "$GREETING $(pwd)"; exit 7',
      cwd: '/',
      env: { ...env, GREETING: 'hi' },
      timeoutMs: 10_000,
      onLine: (_s, l) => lines.push(l),
    });
    expect(r.exitCode).toBe(7);
    expect(lines).toEqual(['hi /']);
  });

  it('kills the whole process group on timeout, SIGKILL for what ignores SIGTERM', async () => {
    const lines: string[] = [];
    const start = Date.now();
    // the grandchild sleep ignores SIGTERM (inherited from the trap) and is not the shell's direct child
    const r = await runStep({
      command: `sh -c 'trap "" TERM; sleep 30 & echo $!; wait'`,
      cwd: os.tmpdir(),
      env,
      timeoutMs: 400,
      killGraceMs: 300,
      onLine: (_s, l) => lines.push(l),
    });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    const grandchild = Number(lines[0]);
    expect(grandchild).toBeGreaterThan(1);
    expect(processAlive(grandchild)).toBe(false);
    expect(Date.now() - start).toBeLessThan(4000);
  });

  it('stops on abort and reports cancelled', async () => {
    const ac = new AbortController();
    const lines: string[] = [];
    setTimeout(() => ac.abort(), 200);
    const r = await runStep({
      command: 'sleep 20 & echo $!; wait',
      cwd: os.tmpdir(),
      env,
      timeoutMs: 10_000,
      signal: ac.signal,
      killGraceMs: 300,
      onLine: (_s, l) => lines.push(l),
    });
    expect(r.cancelled).toBe(true);
    expect(r.timedOut).toBe(false);
    expect(processAlive(Number(lines[0]))).toBe(false);
  });

  it('kills what a successful step left running in the background', async () => {
    const lines: string[] = [];
    const r = await runStep({
      command: 'sleep 30 >/dev/null 2>&1 & echo $!',
      cwd: os.tmpdir(),
      env,
      timeoutMs: 10_000,
      onLine: (_s, l) => lines.push(l),
    });
    expect(r.exitCode).toBe(0);
    expect(processAlive(Number(lines[0]))).toBe(false);
  });
});

describe('pipeLines', () => {
  it('cuts a line at MAX_LINE as it is read: passed on before its end, the rest up to its newline dropped', async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    let done = false;
    pipeLines(
      stream,
      'stdout',
      (_s, l) => lines.push(l),
      () => (done = true),
    );
    stream.write('a short one\r\n');
    for (let i = 0; i < 100; i++) stream.write('x'.repeat(10_000)); // 1 MB, no newline
    await new Promise((r) => setImmediate(r));
    expect(lines).toEqual(['a short one', `${'x'.repeat(MAX_LINE)}…`]);
    stream.write('still the same line\nnext');
    stream.end(' line');
    await new Promise((r) => stream.on('close', r));
    expect(done).toBe(true);
    expect(lines).toEqual(['a short one', `${'x'.repeat(MAX_LINE)}…`, 'next line']);
  });

  it('joins a line split over chunks, and a multi-byte character split between them', async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    pipeLines(
      stream,
      'stdout',
      (_s, l) => lines.push(l),
      () => undefined,
    );
    const euro = Buffer.from('€');
    stream.write(Buffer.concat([Buffer.from('one '), euro.subarray(0, 1)]));
    stream.write(Buffer.concat([euro.subarray(1), Buffer.from(' two\nthree')]));
    stream.end();
    await new Promise((r) => stream.on('close', r));
    expect(lines).toEqual(['one € two', 'three']);
  });
});
