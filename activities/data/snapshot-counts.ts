/**
 * What a backup records of the data it takes, for the restore drills to compare with (restore-drill.ts):
 * - the row count of every table, counted in the very snapshot that pg_dump reads: a repeatable-read
 *   transaction exports its snapshot (`pg_export_snapshot()`), pg_dump imports it (`--snapshot`), and the
 *   transaction counts and stays open until pg_dump has ended;
 * - the number of entries (files, directories, links) of the volume's tar, read from the tar's headers as the
 *   tar streams by (POSIX ustar / GNU format: one 512-byte header per entry, its data padded to 512 bytes).
 */
import pg from 'pg';
import type { Config } from '../../system/config';
import { serviceSessionUrl, type ServiceLogin } from '../../host/pg-server';
import { countTables } from './row-counts';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

/**
 * Yields what `dump(snapshot)` yields (pg_dump with `--snapshot=<snapshot>`), its snapshot exported by a
 * transaction of the service's own role that counts every table's rows meanwhile; `record` gets the counts
 * once the dump has ended. The counting session is the tenant's role with an empty search_path (row-counts.ts).
 */
export async function* dumpInExportedSnapshot(
  config: PgConfig,
  login: ServiceLogin,
  dump: (snapshot: string) => AsyncIterable<Buffer>,
  record: (tables: Record<string, number>) => void,
): AsyncGenerator<Buffer> {
  const c = new pg.Client({ connectionString: serviceSessionUrl(config, login) });
  try {
    let snapshot: string;
    try {
      await c.connect();
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      snapshot = (await c.query('SELECT pg_catalog.pg_export_snapshot() AS s')).rows[0].s as string;
    } catch (err) {
      throw new Error(`pg_dump failed: its snapshot could not be exported: ${(err as Error).message}`);
    }
    // The counts run beside the dump, in the same snapshot (the transaction is what keeps it importable).
    const counting = countTables(c);
    counting.catch(() => undefined);
    yield* dump(snapshot);
    record(await counting);
    await c.query('COMMIT');
  } finally {
    await c.end().catch(() => undefined);
  }
}

const NOT_ENTRIES = new Set(['L', 'K', 'x', 'g']); // GNU long name/link, pax headers: about the next entry

/** The size field of a tar header: octal text, or base-256 (first byte's high bit set) for large files. */
function headerSize(field: Buffer): number {
  if (field[0] & 0x80) {
    let v = field[0] & 0x7f;
    for (let i = 1; i < field.length; i++) v = v * 256 + field[i];
    return v;
  }
  const text = field
    .toString('ascii')
    .replace(/\0[\s\S]*$/, '')
    .trim();
  return text ? Number.parseInt(text, 8) : 0;
}

/** Counts the entries of a tar stream fed to it chunk by chunk. */
class TarEntryCounter {
  entries = 0;
  private skip = 0;
  private head: Buffer = Buffer.alloc(0);

  feed(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
        continue;
      }
      const take = chunk.subarray(at, at + 512 - this.head.length);
      at += take.length;
      this.head = Buffer.concat([this.head, take]);
      if (this.head.length < 512) return;
      this.header(this.head);
      this.head = Buffer.alloc(0);
    }
  }

  private header(h: Buffer): void {
    if (h.every((b) => b === 0)) return; // the end of the archive, and the record's padding after it
    if (!NOT_ENTRIES.has(String.fromCharCode(h[156]))) this.entries++;
    this.skip = Math.ceil(headerSize(h.subarray(124, 136)) / 512) * 512;
  }
}

/** Passes a tar stream through unchanged; `record` gets its entry count once it has ended. */
export async function* countTarEntries(
  source: AsyncIterable<Buffer>,
  record: (entries: number) => void,
): AsyncGenerator<Buffer> {
  const counter = new TarEntryCounter();
  for await (const chunk of source) {
    counter.feed(chunk);
    yield chunk;
  }
  record(counter.entries);
}
