/**
 * host/git-run.ts makes each DATA_DIR's git home once and keeps it. What it keeps must not hold the async context of
 * the call that made it: a Temporal activity's context (AsyncLocalStorage) reaches its whole worker, and a process
 * that serves one DATA_DIR after another (a vitest worker running files one after another) kept every file's worker:
 * ~8 MB of heap a file, and a slower fork for every child process after it. Real git, a real repository.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveRef } from '../../../host/git';

let root: string;
let repo: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vc-git-home-'));
  repo = path.join(root, 'repos', 'app');
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  execFileSync(
    'git',
    ['-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-q', '--allow-empty', '-m', 'one'],
    {
      cwd: repo,
    },
  );
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A full garbage collection, also where the process was started without --expose-gc. */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const contexts = new AsyncLocalStorage<{ worker: Uint8Array }>();

/** A git call in its own DATA_DIR, made as an activity makes it: inside a context (which reaches its worker). */
async function callIn(name: string): Promise<WeakRef<object>> {
  const dataDir = path.join(root, name);
  const access = { dataDir, localRepositoryRoots: [path.join(root, 'repos')], outboundAllowedHosts: [] };
  const store = { worker: new Uint8Array(1024) };
  const sha = await contexts.run(store, () => resolveRef({ url: repo }, 'main', { access }));
  expect(sha).toMatch(/^[0-9a-f]{40}$/);
  return new WeakRef(store);
}

it("keeps no caller's async context once a DATA_DIR's git home is made", async () => {
  const refs: WeakRef<object>[] = [];
  for (const name of ['first', 'second', 'third']) refs.push(await callIn(name));
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 10));
    collect();
  }
  expect(refs.map((r) => r.deref() === undefined)).toEqual([true, true, true]);
});
