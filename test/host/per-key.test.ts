/**
 * host/per-key.ts: MadeOnce (a value made once per key; callers meanwhile share the try; a failed try is made again)
 * and OneAtATime (one task per key at a time, in order); neither keeps a caller's async context.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { MadeOnce, OneAtATime } from '../../host/per-key';

describe('MadeOnce', () => {
  it('makes a key once; callers during the make share it', async () => {
    const once = new MadeOnce<number>();
    let makes = 0;
    const make = async () => {
      makes++;
      await new Promise((r) => setTimeout(r, 20));
      return 7;
    };
    expect(await Promise.all([once.get('a', make), once.get('a', make)])).toEqual([7, 7]);
    expect(await once.get('a', make)).toBe(7);
    expect(makes).toBe(1);
    expect(await once.get('b', make)).toBe(7);
    expect(makes).toBe(2);
  });

  it('keeps no failed try: the next call makes it again', async () => {
    const once = new MadeOnce<string>();
    await expect(once.get('a', async () => Promise.reject(new Error('disk full')))).rejects.toThrow('disk full');
    expect(await once.get('a', async () => 'made')).toBe('made');
  });

  it('forget: the next call makes it again, and a try under way when forgotten is not kept', async () => {
    const once = new MadeOnce<string>();
    expect(await once.get('a', async () => 'one')).toBe('one');
    once.forget('a');
    let release: () => void = () => undefined;
    const slow = once.get('a', () => new Promise<string>((r) => (release = () => r('two'))));
    once.forget('a');
    release();
    expect(await slow).toBe('two');
    expect(await once.get('a', async () => 'three')).toBe('three');
  });

  it("keeps the value, not the first caller's async context", async () => {
    const once = new MadeOnce<string>();
    const contexts = new AsyncLocalStorage<object>();
    const ref = await (async () => {
      const store = { worker: new Uint8Array(1024) };
      await contexts.run(store, () => once.get('a', async () => 'made'));
      return new WeakRef(store);
    })();
    await new Promise((r) => setTimeout(r, 10));
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    expect(ref.deref()).toBeUndefined();
    expect(await once.get('a', async () => 'again')).toBe('made');
  });
});

describe('OneAtATime', () => {
  it('runs one task per key at a time, in the order asked; a failed one does not stop the next', async () => {
    const queue = new OneAtATime();
    const seen: string[] = [];
    const task =
      (name: string, ms: number, fail = false) =>
      async () => {
        seen.push(`${name} start`);
        await new Promise((r) => setTimeout(r, ms));
        seen.push(`${name} end`);
        if (fail) throw new Error(`${name} failed`);
        return name;
      };
    const first = queue.run('m', task('a', 30, true));
    const second = queue.run('m', task('b', 5));
    const other = queue.run('n', task('c', 5));
    await expect(first).rejects.toThrow('a failed');
    expect(await second).toBe('b');
    expect(await other).toBe('c');
    expect(seen.indexOf('b start')).toBeGreaterThan(seen.indexOf('a end'));
    expect(seen.indexOf('c start')).toBeLessThan(seen.indexOf('a end'));
  });

  it("keeps no caller's async context once its tasks are done", async () => {
    const queue = new OneAtATime();
    const contexts = new AsyncLocalStorage<object>();
    const ref = await (async () => {
      const store = { worker: new Uint8Array(1024) };
      await contexts.run(store, () => queue.run(21000, async () => undefined));
      return new WeakRef(store);
    })();
    await new Promise((r) => setTimeout(r, 10));
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    expect(ref.deref()).toBeUndefined();
  });
});
