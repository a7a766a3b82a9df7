/**
 * The snapshot format (README "Backups"): everything a snapshot holds, encrypted with AES-256-GCM under the
 * environment's backup key, written and read as a stream (never whole in memory).
 *
 *   header  = "VCBACKUP" (8 bytes) | version (1 byte, 1) | key fingerprint (16 bytes) | nonce prefix (8 random bytes)
 *   frame   = part (1 byte) | length (4 bytes, big-endian, at most 1 MiB) | ciphertext (length bytes) | tag (16 bytes)
 *   parts   : 1 = the database (`pg_dump -Fc` output), 2 = the volume files (a tar), 255 = end (length 0)
 *
 * Frame i (from 0) is sealed with nonce = nonce prefix | i (4 bytes, big-endian) and additional data =
 * header | part | length, so frames cannot be reordered, moved to another snapshot or dropped; the end
 * frame proves the stream was not cut short. The key fingerprint is the first 16 bytes of SHA-256(key).
 * scripts/decrypt-backup.mjs reads the same format with nothing but Node.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const MAGIC = Buffer.from('VCBACKUP', 'ascii');
const VERSION = 1;
const PART = { database: 1, files: 2, end: 255 } as const;
export type PartName = 'database' | 'files';
const HEADER_LENGTH = MAGIC.length + 1 + 16 + 8;
const MAX_FRAME = 1024 * 1024;
const TAG = 16;

/** The first 16 bytes of SHA-256(key), hex: names a key without revealing it. */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest().subarray(0, 16).toString('hex');
}

function nonceOf(prefix: Buffer, index: number): Buffer {
  const nonce = Buffer.alloc(12);
  prefix.copy(nonce, 0);
  nonce.writeUInt32BE(index, 8);
  return nonce;
}

function frameHead(part: number, length: number): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(part, 0);
  head.writeUInt32BE(length, 1);
  return head;
}

/**
 * Encrypts the parts in order into the snapshot byte stream. Each source is read lazily, so a consumer that
 * writes slowly (an upload) slows the reading of the sources down (back-pressure through the generator).
 */
export async function* encryptSnapshot(
  key: Buffer,
  parts: Array<{ part: PartName; source: () => AsyncIterable<Buffer | string> }>,
): AsyncGenerator<Buffer> {
  if (key.length !== 32) throw new Error('a backup key is 32 bytes');
  const header = Buffer.concat([
    MAGIC,
    Buffer.from([VERSION]),
    Buffer.from(keyFingerprint(key), 'hex'),
    randomBytes(8),
  ]);
  const prefix = header.subarray(HEADER_LENGTH - 8);
  yield header;
  let index = 0;
  const seal = (part: number, plain: Buffer): Buffer => {
    const head = frameHead(part, plain.length);
    const cipher = createCipheriv('aes-256-gcm', key, nonceOf(prefix, index++));
    cipher.setAAD(Buffer.concat([header, head]));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([head, body, cipher.getAuthTag()]);
  };
  for (const { part, source } of parts) {
    for await (const chunk of source()) {
      const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      for (let at = 0; at < data.length; at += MAX_FRAME) yield seal(PART[part], data.subarray(at, at + MAX_FRAME));
    }
  }
  yield seal(PART.end, Buffer.alloc(0));
}

/** Reads exactly n bytes at a time out of a chunked stream. */
class ByteReader {
  private chunks: Buffer[] = [];
  private length = 0;
  private done = false;
  constructor(private readonly it: AsyncIterator<Buffer | string>) {}

  async read(n: number): Promise<Buffer | null> {
    while (this.length < n && !this.done) {
      const next = await this.it.next();
      if (next.done) this.done = true;
      else {
        const b = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
        this.chunks.push(b);
        this.length += b.length;
      }
    }
    if (this.length < n) return this.length === 0 && n > 0 ? null : Buffer.alloc(0);
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.length = rest.length;
    return out;
  }
}

class SnapshotFormatError extends Error {}

/** Reads the header only: the key fingerprint a snapshot needs. */
function readHeader(header: Buffer): { version: number; fingerprint: string } {
  if (header.length < HEADER_LENGTH || !header.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new SnapshotFormatError('not a snapshot of this console (bad magic)');
  }
  const version = header.readUInt8(MAGIC.length);
  if (version !== VERSION) throw new SnapshotFormatError(`snapshot format version ${version} is not known`);
  return { version, fingerprint: header.subarray(MAGIC.length + 1, MAGIC.length + 17).toString('hex') };
}

/**
 * Decrypts a snapshot stream, yielding each part's plaintext in order. Throws SnapshotFormatError on a
 * wrong key, a damaged or reordered frame, or a stream that ends before its end frame.
 */
export async function* decryptSnapshot(
  key: Buffer,
  input: AsyncIterable<Buffer | string>,
): AsyncGenerator<{ part: PartName; data: Buffer }> {
  const reader = new ByteReader(input[Symbol.asyncIterator]());
  const header = await reader.read(HEADER_LENGTH);
  if (!header || header.length < HEADER_LENGTH) throw new SnapshotFormatError('the snapshot is empty or cut short');
  const { fingerprint } = readHeader(header);
  if (fingerprint !== keyFingerprint(key))
    throw new SnapshotFormatError(`the snapshot was encrypted under another key (fingerprint ${fingerprint})`);
  const prefix = header.subarray(HEADER_LENGTH - 8);
  for (let index = 0; ; index++) {
    const head = await reader.read(5);
    if (!head || head.length < 5) throw new SnapshotFormatError('the snapshot is cut short (no end frame)');
    const part = head.readUInt8(0);
    const length = head.readUInt32BE(1);
    if (length > MAX_FRAME) throw new SnapshotFormatError('damaged frame (too long)');
    const body = await reader.read(length + TAG);
    if (!body || body.length < length + TAG) throw new SnapshotFormatError('the snapshot is cut short');
    const decipher = createDecipheriv('aes-256-gcm', key, nonceOf(prefix, index));
    decipher.setAAD(Buffer.concat([header, head]));
    decipher.setAuthTag(body.subarray(length));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(body.subarray(0, length)), decipher.final()]);
    } catch {
      throw new SnapshotFormatError(`frame ${index} does not authenticate (damaged, reordered or another key)`);
    }
    if (part === PART.end) return;
    if (part !== PART.database && part !== PART.files) throw new SnapshotFormatError(`unknown part ${part}`);
    yield { part: part === PART.database ? 'database' : 'files', data: plain };
  }
}
