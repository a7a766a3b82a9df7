/** host/made-once.ts: a value made once per key; callers meanwhile share the try; a failed try is made again. */
import { AsyncLocalStorage } from 'node:async_hooks';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { MadeOnce } from '../../host/made-once';

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
