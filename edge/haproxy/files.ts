/**
 * The page, map and ACL files of the data plane (`pages/`, `maps/`, `acls/` under DATA_DIR/edge/haproxy):
 * each state applied writes the files of its model that changed, atomically, and removes those it no longer
 * has (a maintenance page edited, a project deleted, a list emptied), so neither the disk nor this memo grows
 * with every page a project ever had.
 *
 * Removing is safe once the new haproxy.cfg is written: HAProxy reads pages, maps and ACLs when it loads a
 * configuration and holds them in memory, so a running worker never reads them again, and the configuration
 * on disk names only files of the model. Files found on disk at the first write (a previous control plane's,
 * a temporary file a crash left) that the model does not have are removed too.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeAtomic } from './paths';

/** The folders under the data plane's dir whose every file belongs to the model. */
const MODEL_DIRS = ['pages', 'maps', 'acls'] as const;

export class DataPlaneFiles {
  /** Relative path -> the content this writer wrote there (null: found on disk, content not known). */
  private readonly written = new Map<string, string | null>();
  private scanned = false;

  constructor(private readonly dir: string) {}

  /**
   * Writes the files of `next` (relative path -> content) that differ from what was written (or, the first
   * time, from what is on disk). Returns the relative paths written.
   */
  write(next: Iterable<[string, string]>): string[] {
    if (!this.scanned) this.scan();
    const out: string[] = [];
    for (const [file, text] of next) {
      if (this.written.get(file) === text) continue;
      const path = join(this.dir, file);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      if (writeAtomic(path, text)) out.push(file);
      this.written.set(file, text);
    }
    return out;
  }

  /** Removes every file written (or found) that `keep` does not have; returns their relative paths. */
  prune(keep: { has(file: string): boolean }): string[] {
    const out: string[] = [];
    for (const file of this.written.keys()) {
      if (keep.has(file)) continue;
      rmSync(join(this.dir, file), { force: true });
      this.written.delete(file);
      out.push(file);
    }
    return out;
  }

  /** The relative paths this writer holds as written (for tests: what it keeps in memory). */
  files(): string[] {
    return [...this.written.keys()].sort();
  }

  private scan(): void {
    for (const sub of MODEL_DIRS) {
      let names: string[];
      try {
        names = readdirSync(join(this.dir, sub));
      } catch {
        continue; // not made yet
      }
      for (const name of names) this.written.set(`${sub}/${name}`, null);
    }
    this.scanned = true;
  }
}
