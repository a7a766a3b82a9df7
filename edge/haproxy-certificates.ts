/**
 * Loading certificates into a running HAProxy through its runtime API (the stats socket, `level admin`),
 * without a reload: open connections keep going, new handshakes get the new certificate by SNI.
 *
 * - a new certificate: `new ssl cert <file>`, `set ssl cert <file> <<PEM`, `commit ssl cert <file>`, then
 *   `add ssl crt-list <list> <<<file> <sni>` (the list a `bind ... ssl crt-list <list>` line names);
 * - a renewed one: `set ssl cert` + `commit ssl cert` (the same entry, in every bind using it);
 * - a removed one: `del ssl crt-list <list> <file>`, then `del ssl cert <file>`.
 *
 * The file names are those edge/certificate-files.ts writes, so what is loaded at runtime is what a restart
 * of HAProxy reads from disk. The PEM (chain + key) only travels over the local socket; it is never logged.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CertificateFileChanges } from './certificate-files';
import { HaproxyRuntimeError, runtimeCommand, verb } from './runtime-command';

function expect(command: string, answer: string, ok: RegExp): string {
  if (!ok.test(answer)) throw new HaproxyRuntimeError(`${verb(command)}: ${answer.split('\n')[0] || 'no answer'}`);
  return answer;
}

export class HaproxyCertificates {
  constructor(
    private readonly socketPath: string,
    /** The crt-list file the TLS bind names. */
    private readonly crtList: string,
  ) {}

  private run(command: string, payload?: string) {
    return runtimeCommand(this.socketPath, command, { payload });
  }

  /** The certificate files HAProxy holds in memory. */
  async loaded(): Promise<Set<string>> {
    const answer = await this.run('show ssl cert');
    return new Set(
      answer
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('#') && !l.startsWith('*')),
    );
  }

  /** The files the crt-list names now. */
  async listed(): Promise<Set<string>> {
    const answer = await this.run(`show ssl crt-list ${this.crtList}`);
    return new Set(
      answer
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => l.split(' ')[0]),
    );
  }

  /**
   * Loads `pem` (leaf, chain, key) as `file`, served for `sni`: added when HAProxy does not have it yet,
   * replaced in place when it does. Either way no reload, no connection dropped.
   */
  async load(file: string, sni: string, pem: string): Promise<'added' | 'updated'> {
    const known = (await this.loaded()).has(file);
    if (!known) expect('new ssl cert', await this.run(`new ssl cert ${file}`), /New empty certificate store/i);
    try {
      expect('set ssl cert', await this.run(`set ssl cert ${file}`, pem), /Transaction (created|updated)/i);
      expect('commit ssl cert', await this.run(`commit ssl cert ${file}`), /Success/i);
    } catch (err) {
      await this.run(`abort ssl cert ${file}`).catch(() => undefined);
      // A store made for it just now and never filled goes again.
      if (!known) await this.run(`del ssl cert ${file}`).catch(() => undefined);
      throw err;
    }
    if (!(await this.listed()).has(file)) {
      expect('add ssl crt-list', await this.run(`add ssl crt-list ${this.crtList}`, `${file} ${sni}`), /Success/i);
    }
    return known ? 'updated' : 'added';
  }

  /** Stops serving `file`: out of the crt-list, then out of memory. */
  async remove(file: string): Promise<void> {
    if ((await this.listed()).has(file)) {
      expect('del ssl crt-list', await this.run(`del ssl crt-list ${this.crtList} ${file}`), /deleted|Success/i);
    }
    if ((await this.loaded()).has(file)) {
      expect('del ssl cert', await this.run(`del ssl cert ${file}`), /deleted|Success/i);
    }
  }
}

/**
 * Brings a running HAProxy up to what `CertificateFiles.sync()` just changed on disk: each written file
 * loaded (added or replaced), each removed one dropped. `path` is `CertificateFiles.path`.
 */
export async function applyCertificateChanges(
  runtime: HaproxyCertificates,
  path: (hostname: string) => string,
  changes: CertificateFileChanges,
): Promise<void> {
  for (const hostname of changes.written)
    await runtime.load(path(hostname), hostname, readFileSync(path(hostname), 'utf8'));
  for (const hostname of changes.removed) await runtime.remove(path(hostname));
}

/**
 * What a sync of the certificates' files wrote and removed, into the running HAProxy (`admin`, its stats socket;
 * `crtList`, the list its HTTPS bind reads; `dir`, where the files are): the written ones loaded now, before the
 * state that redirects their names to HTTPS is applied; the removed ones dropped by the function this returns,
 * to be called once that state no longer redirects their names (so no name is redirected to HTTPS while it has
 * no certificate of its own). A failure goes to `failed` (the caller reloads: HAProxy then reads the files).
 */
export async function loadCertificateChanges(o: {
  admin: string;
  crtList: string;
  dir: string;
  changes: CertificateFileChanges;
  failed: (err: unknown) => void;
}): Promise<() => Promise<void>> {
  const { changes, failed } = o;
  if (!changes.written.length && !changes.removed.length) return async () => undefined;
  const runtime = new HaproxyCertificates(o.admin, o.crtList);
  const path = (h: string) => join(o.dir, `${h}.pem`);
  await applyCertificateChanges(runtime, path, { ...changes, removed: [] }).catch(failed);
  return () => applyCertificateChanges(runtime, path, { ...changes, written: [] }).catch(failed);
}
