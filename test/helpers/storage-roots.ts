import { chmodSync, mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Two storage roots in a fresh folder beside the test run's data (the folder only searchable by others), made
 * STORAGE_ROOTS of the API and the worker of the calling file (they share the config).
 */
export function makeStorageRoots(t: {
  dataDir: string;
  deps: { config: { storageRoots: string[] } };
}): [string, string] {
  const base = mkdtempSync(join(t.dataDir, '..', 'storage-roots-'));
  chmodSync(base, 0o711);
  const roots: [string, string] = [join(base, 'first'), join(base, 'second')];
  for (const r of roots) mkdirSync(r, { mode: 0o755 });
  t.deps.config.storageRoots = [...roots];
  return roots;
}
