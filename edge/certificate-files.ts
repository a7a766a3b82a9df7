/**
 * The certificates as files, for HAProxy (CONTRACT "Certificates", docs/https.md): one PEM per hostname
 * (the leaf, its chain, then the private key: HAProxy's `crt` format) and a `crt-list.txt` naming each file
 * with its SNI name, in a root-only 0700 directory (DATA_DIR/edge/certs), each file 0600. This directory is
 * the ONE place a secret is kept in the clear at rest: HAProxy must read the keys across reloads. Everywhere
 * else (PostgreSQL) the keys stay sealed.
 *
 * `sync()` makes the directory match PostgreSQL: every served certificate (issued, not expired, its domain
 * verified) written atomically (a temporary file renamed over the old one), files of deleted domains and
 * expired certificates removed. It says what changed, so the data plane can load just that (runtime API).
 */
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Knex } from 'knex';
import { open } from '../system/crypto';
import type { Secrets } from '../system/secrets';
import { servedCertificates } from '../db/queries/certificates';

export const CRT_LIST = 'crt-list.txt';
const HOSTNAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/;

/** The certificate directory under DATA_DIR. */
export const certificateDir = (dataDir: string) => join(dataDir, 'edge', 'certs');

export interface CertificateFileChanges {
  /** Hostnames whose file was written (new or renewed). */
  written: string[];
  /** Hostnames whose file was removed. */
  removed: string[];
}

export interface CertificateFilesOptions {
  knex: Knex;
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;
  dir: string;
}

export class CertificateFiles {
  /** hostname -> serial of the file written. */
  private written = new Map<string, string>();

  constructor(private readonly o: CertificateFilesOptions) {}

  /** A sync that logs its failure instead of throwing (serving goes on); nothing to do without options. */
  static syncer(
    knex: Knex,
    o: Omit<CertificateFilesOptions, 'knex'> | undefined,
    logger?: { warn(obj: unknown, msg?: string): void },
  ): () => Promise<CertificateFileChanges | undefined> {
    const files = o ? new CertificateFiles({ ...o, knex }) : null;
    return async () =>
      files
        ?.sync()
        .catch(
          (err) => void logger?.warn({ err: (err as Error).message }, 'the certificate files could not be written'),
        );
  }

  /** The file of a hostname. */
  path(hostname: string): string {
    return join(this.o.dir, `${hostname}.pem`);
  }

  async sync(): Promise<CertificateFileChanges> {
    const rows = await servedCertificates(this.o.knex);
    this.prepare();
    const changes: CertificateFileChanges = { written: [], removed: [] };
    const wanted = new Set<string>();
    for (const r of rows) {
      if (!HOSTNAME.test(r.hostname)) continue;
      wanted.add(r.hostname);
      if (this.written.get(r.hostname) === r.serial) continue;
      const key = open(this.o.secrets, r.private_key_sealed, `certificate:${r.domain_id}`);
      const chain = r.certificate_pem.endsWith('\n') ? r.certificate_pem : `${r.certificate_pem}\n`;
      this.writeAtomically(this.path(r.hostname), chain + key.toString());
      this.written.set(r.hostname, r.serial);
      changes.written.push(r.hostname);
    }
    for (const file of readdirSync(this.o.dir)) {
      const hostname = file.endsWith('.pem') ? file.slice(0, -4) : null;
      if (hostname && wanted.has(hostname)) continue;
      if (file === CRT_LIST) continue;
      rmSync(join(this.o.dir, file), { force: true });
      if (hostname) {
        this.written.delete(hostname);
        changes.removed.push(hostname);
      }
    }
    if (changes.written.length || changes.removed.length || this.written.size === 0) {
      const list = [...wanted].sort().map((h) => `${this.path(h)} ${h}\n`);
      this.writeAtomically(join(this.o.dir, CRT_LIST), list.join(''));
    }
    return changes;
  }

  /** The directory, root-only (0700) whatever the umask or an earlier mode. */
  private prepare(): void {
    mkdirSync(dirname(this.o.dir), { recursive: true, mode: 0o700 });
    mkdirSync(this.o.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.o.dir, 0o700);
  }

  private writeAtomically(path: string, content: string): void {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, content, { mode: 0o600 });
    renameSync(tmp, path);
  }
}
