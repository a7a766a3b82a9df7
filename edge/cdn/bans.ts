/**
 * `cdn/clear` on Varnish: one ban per path prefix of an environment, matched on what each entry carries
 * (`obj.http.x-vc-env`, `obj.http.x-vc-url`, set by edge/cdn/vcl.ts), so the ban lurker can retire old
 * entries in the background; a request checks the bans newer than its entry before it is served, so a
 * ban works at once. No prefix: the whole environment.
 *
 * The purger also remembers (purge-seq, beside the VCL) the last purge the cache has applied, so a control
 * plane that adopts a running varnishd applies only the purges it missed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Purger } from '../purges';
import { type Varnish, writeAtomic } from './varnish';

/** A literal string as a PCRE2 pattern: every character that is not a letter or digit is escaped. */
export function escapeRegex(s: string): string {
  return s.replace(/[^A-Za-z0-9]/gu, (c) => (c.charCodeAt(0) < 0x80 ? `\\${c}` : c));
}

/** The `ban` words for the environment's entries under each prefix (none: all of its entries). */
export function banWords(environmentId: string, prefixes: string[]): string[][] {
  const env = ['obj.http.x-vc-env', '==', environmentId];
  if (prefixes.length === 0) return [env];
  return prefixes.map((p) => [...env, '&&', 'obj.http.x-vc-url', '~', `^${escapeRegex(p)}`]);
}

export class VarnishPurger implements Purger {
  private readonly seqFile: string;

  constructor(private readonly varnish: Varnish) {
    this.seqFile = path.join(path.dirname(varnish.files.vcl), 'purge-seq');
  }

  async purge(environmentId: string, prefixes: string[]): Promise<void> {
    for (const words of banWords(environmentId, prefixes)) await this.varnish.ban(words);
  }

  async resumeFrom(): Promise<number | null> {
    if (!this.varnish.adopted) return null; // a new varnishd: an empty cache, nothing to catch up
    const seq = Number(readSeq(this.seqFile));
    if (Number.isSafeInteger(seq) && seq >= 0 && readSeq(this.seqFile) !== '') return seq;
    // An adopted cache whose purges are unknown: all of it goes.
    await this.varnish.ban(['obj.status', '!=', '0']);
    return null;
  }

  async applied(seq: number): Promise<void> {
    if (readSeq(this.seqFile) !== String(seq)) writeAtomic(this.seqFile, String(seq));
  }

  suspend(): Promise<void> {
    return this.varnish.suspend();
  }

  resume(): Promise<void> {
    return this.varnish.resume();
  }
}

function readSeq(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}
