/**
 * Decryption of a console snapshot (format in host/snapshot-format.ts), shared by
 * scripts/decrypt-backup.mjs and `service backup download --decrypt`: plain Node, no dependencies, so the
 * script keeps running from a bare checkout. Streams frame by frame: never the whole snapshot in memory.
 */
import { createDecipheriv, createHash } from 'node:crypto';
import { once } from 'node:events';

const MAGIC = Buffer.from('VCBACKUP');
const HEADER = MAGIC.length + 1 + 16 + 8;
/** The parts a snapshot holds, by their number in a frame head. */
export const PARTS = { 1: 'database', 2: 'files' };

export class SnapshotError extends Error {}

/**
 * Decrypts `chunks` (the snapshot's bytes) under `key` (32 bytes) into `output(part)` streams, one per
 * part ('database', 'files'); each is asked for at least once (an absent part is empty) and ended.
 * Throws SnapshotError when the file is not a snapshot, is cut short, or does not authenticate; the
 * caller removes what was written then.
 */
export async function decryptSnapshot(key, chunks, output) {
  if (key.length !== 32) throw new SnapshotError('the key must be base64 of 32 bytes');
  const input = chunks[Symbol.asyncIterator]();
  let buffered = Buffer.alloc(0);
  async function read(n) {
    while (buffered.length < n) {
      const next = await input.next();
      if (next.done) throw new SnapshotError('the snapshot is cut short');
      buffered = Buffer.concat([buffered, next.value]);
    }
    const out = buffered.subarray(0, n);
    buffered = buffered.subarray(n);
    return out;
  }
  const streams = {};
  const stream = (part) => (streams[part] ??= output(PARTS[part]));
  const header = await read(HEADER);
  if (!header.subarray(0, 8).equals(MAGIC)) throw new SnapshotError('not a snapshot (bad magic)');
  if (header[8] !== 1) throw new SnapshotError(`unknown format version ${header[8]}`);
  const fingerprint = header.subarray(9, 25).toString('hex');
  if (fingerprint !== createHash('sha256').update(key).digest().subarray(0, 16).toString('hex')) {
    throw new SnapshotError(`the snapshot was encrypted under another key (fingerprint ${fingerprint})`);
  }
  const prefix = header.subarray(25, 33);
  for (let index = 0; ; index++) {
    const head = await read(5);
    const part = head[0];
    const length = head.readUInt32BE(1);
    const body = await read(length + 16);
    const nonce = Buffer.alloc(12);
    prefix.copy(nonce, 0);
    nonce.writeUInt32BE(index, 8);
    const decipher = createDecipheriv('aes-256-gcm', key, nonce);
    decipher.setAAD(Buffer.concat([header, head]));
    decipher.setAuthTag(body.subarray(length));
    let plain;
    try {
      plain = Buffer.concat([decipher.update(body.subarray(0, length)), decipher.final()]);
    } catch {
      throw new SnapshotError(`frame ${index} does not authenticate: damaged file or wrong key`);
    }
    if (part === 255) break;
    if (!PARTS[part]) throw new SnapshotError(`unknown part ${part}`);
    if (!stream(part).write(plain)) await once(stream(part), 'drain');
  }
  for (const part of Object.keys(PARTS)) stream(part);
  await Promise.all(
    Object.values(streams).map((s) => new Promise((resolve, reject) => s.once('error', reject).end(resolve))),
  );
}
