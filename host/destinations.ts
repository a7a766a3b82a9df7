/**
 * Backup destinations as object stores: `local` (a directory under BACKUP_LOCAL_ROOTS that only root can
 * change, local-destination.ts) and `s3` (any S3-compatible
 * store, path-style addressing). Objects are streamed both ways; a `put` that fails leaves no object behind
 * (local: written to `<name>.partial`, renamed when complete; s3: a multipart upload, aborted on failure).
 */
import { constants } from 'node:fs';
import { type FileHandle, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { createHash, randomBytes } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import http from 'node:http';
import https from 'node:https';
import { checkOutboundHost, guardedLookup, type OutboundConfig } from './outbound';
import { Dir } from './no-follow';

interface LocalSettings {
  path: string;
}
interface S3Settings {
  endpoint: string;
  region: string;
  bucket: string;
  prefix?: string;
}
interface S3Secrets {
  access_key_id: string;
  secret_access_key: string;
}
export type DestinationSpec =
  | { kind: 'local'; settings: LocalSettings; secrets?: undefined }
  | { kind: 's3'; settings: S3Settings; secrets: S3Secrets };

export interface ObjectStore {
  /** Streams the body to `key`; resolves with the bytes written once the object is complete. */
  put(key: string, body: AsyncIterable<Buffer> | Readable, signal?: AbortSignal): Promise<number>;
  /** The object; with `expected`, only once its size and SHA-256 were found to be those (else ObjectMismatch). */
  get(key: string, expected?: StoredObject): Promise<Readable>;
  delete(key: string): Promise<void>;
  close(): void;
}

/** The fields of each kind (GET /teams/{id}/backup-destinations/new). */
export const DESTINATION_KINDS = [
  { kind: 'local', fields: [{ name: 'path', required: true, secret: false }] },
  {
    kind: 's3',
    fields: [
      { name: 'endpoint', required: true, secret: false },
      { name: 'region', required: true, secret: false },
      { name: 'bucket', required: true, secret: false },
      { name: 'prefix', required: false, secret: false },
      { name: 'access_key_id', required: true, secret: true },
      { name: 'secret_access_key', required: true, secret: true },
    ],
  },
] as const;

const safeKey = (key: string) => {
  if (!/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(key) || key.split('/').some((s) => s === '..' || s === '.')) {
    throw new Error(`not an object key: ${key}`);
  }
  return key;
};

/** The bytes a snapshot row says were stored: what a read must find before it gives out a byte. */
export interface StoredObject {
  size: number;
  sha256: string;
}

/** What a snapshot row says was stored (null until it was: the object cannot be checked, so it is not read). */
export function storedObject(row: { size_bytes: number | string | null; sha256: string | null; object_key: string }) {
  if (row.size_bytes === null || !row.sha256)
    throw new ObjectMismatch(`${row.object_key} has no recorded size and SHA-256 to check it against`);
  return { size: Number(row.size_bytes), sha256: row.sha256 };
}

/** The stored object is not what its row says (another size or content, not a regular file, not root's). */
export class ObjectMismatch extends Error {
  readonly code = 'object_mismatch';
}

const DIR_MODE = 0o700;
const notThere = (err: unknown) => ['ENOENT', 'ELOOP', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');

/**
 * A directory of this host. Every object is reached from a descriptor of the destination's real path, one
 * name at a time, never through a link (no-follow.ts), and every directory and object must be root's:
 * whatever someone else planted there is refused, never read, written or served.
 */
class LocalStore implements ObjectStore {
  constructor(private readonly root: string) {}

  /** The directory holding `key`, opened (and made) below the destination without following a link. */
  private async parent(key: string, create: boolean): Promise<{ dir: Dir; name: string }> {
    const parts = safeKey(key).split('/');
    const name = parts.pop()!;
    let dir = await Dir.openReal(this.root);
    try {
      await ownedByUs(dir);
      for (const part of parts) {
        const next = await dir.dir(part, create ? { create: DIR_MODE } : {}).finally(() => dir.close());
        dir = next;
        await ownedByUs(dir);
      }
      return { dir, name };
    } catch (err) {
      await dir.close();
      throw err;
    }
  }

  async put(key: string, body: AsyncIterable<Buffer> | Readable, signal?: AbortSignal): Promise<number> {
    const { dir, name } = await this.parent(key, true);
    const partial = `${name}.partial`;
    try {
      await dir.unlink(partial); // a half object of a killed attempt
      const fh = await dir.file(partial, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      let size: number;
      try {
        for await (const chunk of body instanceof Readable ? body : Readable.from(body)) {
          signal?.throwIfAborted();
          const data = chunk as Buffer;
          for (let at = 0; at < data.length; ) at += (await fh.write(data, at, data.length - at)).bytesWritten;
        }
        signal?.throwIfAborted();
        await fh.sync();
        size = (await fh.stat()).size;
      } finally {
        await fh.close();
      }
      await dir.rename(partial, name);
      return size;
    } catch (err) {
      await dir.unlink(partial).catch(() => undefined);
      throw err;
    } finally {
      await dir.close();
    }
  }

  async get(key: string, expected?: StoredObject): Promise<Readable> {
    let fh: FileHandle;
    try {
      const { dir, name } = await this.parent(key, false);
      try {
        fh = await dir.file(name);
      } finally {
        await dir.close();
      }
    } catch (err) {
      if (['ELOOP', 'ENOTDIR', 'ENOTREG'].includes((err as { code?: string }).code ?? ''))
        throw new ObjectMismatch(`${key} is not a regular file reached without following a link`);
      throw err;
    }
    try {
      const st = await fh.stat();
      if (st.uid !== process.getuid?.()) throw new ObjectMismatch(`${key} is not the console's own file`);
      if (expected) {
        if (st.size !== expected.size)
          throw new ObjectMismatch(`${key} holds ${st.size} bytes, not the ${expected.size} that were stored`);
        const hash = createHash('sha256');
        for await (const chunk of fh.createReadStream({ start: 0, autoClose: false })) hash.update(chunk as Buffer);
        if (hash.digest('hex') !== expected.sha256)
          throw new ObjectMismatch(`${key} is not the snapshot that was stored (its SHA-256 differs)`);
      }
      return fh.createReadStream({ start: 0 });
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  /** Removes the object and any half of it that a killed writer left (`<name>.partial`); never through a link. */
  async delete(key: string): Promise<void> {
    let opened: { dir: Dir; name: string };
    try {
      opened = await this.parent(key, false);
    } catch (err) {
      if (notThere(err)) return; // nothing of ours is reachable there without following a link
      throw err;
    }
    try {
      await opened.dir.unlink(opened.name);
      await opened.dir.unlink(`${opened.name}.partial`);
    } finally {
      await opened.dir.close();
    }
  }
  close() {}
}

/** A directory of the store must be the console's own (root's): one planted by anyone else is refused. */
async function ownedByUs(dir: Dir): Promise<void> {
  const st = await dir.stat();
  if (st.uid !== process.getuid?.()) throw new ObjectMismatch(`${dir.where} is not the console's own directory`);
}

/**
 * An S3-compatible store, reached through the outbound guard (host/outbound.ts): the
 * endpoint's host is checked before the first request (address literals never go through a DNS lookup) and
 * every connection's own lookup is guarded, so an endpoint on loopback or a private network is refused
 * unless OUTBOUND_ALLOWED_HOSTS lists it.
 */
class S3Store implements ObjectStore {
  /**
   * The AWS SDK, loaded and its client made at the first request: the SDK is a third of a second to load, which
   * every process that imports the backups (and every test file) paid without an S3 destination.
   */
  private sdk: Promise<{ s3: typeof import('@aws-sdk/client-s3'); client: S3Client }> | undefined;
  private checked: Promise<unknown> | undefined;
  constructor(
    private readonly settings: S3Settings,
    private readonly secrets: S3Secrets,
    private readonly outbound: OutboundConfig,
  ) {}
  private connect() {
    this.sdk ??= import('@aws-sdk/client-s3').then((s3) => {
      const lookup = guardedLookup(this.outbound);
      const client = new s3.S3Client({
        requestHandler: { httpAgent: new http.Agent({ lookup }), httpsAgent: new https.Agent({ lookup }) },
        endpoint: this.settings.endpoint,
        region: this.settings.region,
        forcePathStyle: true,
        credentials: { accessKeyId: this.secrets.access_key_id, secretAccessKey: this.secrets.secret_access_key },
        maxAttempts: 2,
      });
      return { s3, client };
    });
    return this.sdk;
  }
  private guard(): Promise<unknown> {
    this.checked ??= checkOutboundHost(new URL(this.settings.endpoint).hostname.replace(/^\[|\]$/g, ''), this.outbound);
    return this.checked;
  }
  private key(key: string) {
    const prefix = (this.settings.prefix ?? '').replace(/^\/+|\/+$/g, '');
    return prefix ? `${prefix}/${safeKey(key)}` : safeKey(key);
  }
  async put(key: string, body: AsyncIterable<Buffer> | Readable, signal?: AbortSignal): Promise<number> {
    await this.guard();
    // before the body is read from: its 'data' listener below sets it flowing, and the Upload must be there to take it
    const [{ client }, { Upload }] = await Promise.all([this.connect(), import('@aws-sdk/lib-storage')]);
    let bytes = 0;
    const counted = (body instanceof Readable ? body : Readable.from(body)).on(
      'data',
      (c: Buffer) => (bytes += c.length),
    );
    const upload = new Upload({
      client,
      params: { Bucket: this.settings.bucket, Key: this.key(key), Body: counted },
      queueSize: 2,
      partSize: 8 * 1024 * 1024,
      leavePartsOnError: false,
    });
    const abort = () => void upload.abort().catch(() => undefined);
    signal?.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } finally {
      signal?.removeEventListener('abort', abort);
    }
    return bytes;
  }
  async get(key: string, expected?: StoredObject): Promise<Readable> {
    await this.guard();
    const { s3, client } = await this.connect();
    const out = await client.send(new s3.GetObjectCommand({ Bucket: this.settings.bucket, Key: this.key(key) }));
    const body = out.Body as Readable;
    if (!expected) return body;
    if (out.ContentLength !== undefined && out.ContentLength !== expected.size) {
      body.destroy();
      throw new ObjectMismatch(`${key} holds ${out.ContentLength} bytes, not the ${expected.size} that were stored`);
    }
    // A remote object cannot be hashed before it is read: it is hashed as it streams, and a stream whose
    // bytes are not the stored ones ends in an error instead of its last chunk.
    return Readable.from(
      (async function* () {
        const hash = createHash('sha256');
        let last: Buffer | null = null;
        for await (const chunk of body) {
          hash.update(chunk as Buffer);
          if (last) yield last;
          last = chunk as Buffer;
        }
        if (hash.digest('hex') !== expected.sha256)
          throw new ObjectMismatch(`${key} is not the snapshot that was stored (its SHA-256 differs)`);
        if (last) yield last;
      })(),
    );
  }
  async delete(key: string): Promise<void> {
    await this.guard();
    const { s3, client } = await this.connect();
    await client.send(new s3.DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.key(key) }));
  }
  close() {
    void this.sdk?.then(({ client }) => client.destroy());
  }
}

export function openStore(spec: DestinationSpec, outbound: OutboundConfig): ObjectStore {
  return spec.kind === 'local'
    ? new LocalStore(spec.settings.path)
    : new S3Store(spec.settings, spec.secrets, outbound);
}

/**
 * Writes, reads back and deletes a probe object. Resolves with null when all three worked, else with
 * the reason (a sentence, never a secret).
 */
export async function probeStore(spec: DestinationSpec, outbound: OutboundConfig): Promise<string | null> {
  return (await probeStoreFault(spec, outbound))?.reason ?? null;
}

/** The fields of an S3 destination a store failure points at. */
type StoreField = 'endpoint' | 'bucket' | 'access_key_id' | 'secret_access_key';

/** probeStore, with the fields at fault: null when the probe worked. */
export async function probeStoreFault(
  spec: DestinationSpec,
  outbound: OutboundConfig,
): Promise<{ reason: string; fields: StoreField[] } | null> {
  const store = openStore(spec, outbound);
  const key = `vc-probe-${randomBytes(8).toString('hex')}`;
  const content = Buffer.from(`probe ${key}`);
  try {
    await store.put(key, Readable.from([content]));
    const chunks: Buffer[] = [];
    for await (const c of await store.get(key)) chunks.push(c as Buffer);
    if (!Buffer.concat(chunks).equals(content))
      return { reason: 'the probe object read back differs from what was written', fields: ['endpoint'] };
    await store.delete(key);
    return null;
  } catch (err) {
    return { reason: describeStoreError(err), fields: storeErrorFields(err) };
  } finally {
    store.close();
  }
}

/**
 * Which fields a store failure points at, from what the store answered (never from the message's text):
 * no S3 answer at all (refused, unresolvable, timed out, an address the outbound guard refuses) is the
 * `endpoint`; NoSuchBucket the `bucket`; an unknown key id `access_key_id`; a bad signature
 * `secret_access_key`; any other refusal of the credentials (401/403) both keys.
 */
function storeErrorFields(err: unknown): StoreField[] {
  const e = err as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number }; $response?: unknown };
  const name = e.Code ?? e.name ?? '';
  const status = e.$metadata?.httpStatusCode;
  if (name === 'NoSuchBucket') return ['bucket'];
  if (name === 'InvalidAccessKeyId') return ['access_key_id'];
  if (name === 'SignatureDoesNotMatch') return ['secret_access_key'];
  if (name === 'AccessDenied' || status === 401 || status === 403) return ['access_key_id', 'secret_access_key'];
  if (status === 404) return ['bucket'];
  return ['endpoint'];
}

/** A readable reason for a store failure that names no credential. */
function describeStoreError(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  const what = e.code ?? e.name ?? 'Error';
  const message = (e.message ?? String(err)).replace(/[A-Za-z0-9/+=]{32,}/g, '[redacted]').slice(0, 300);
  return `${what}${status ? ` (HTTP ${status})` : ''}: ${message}`;
}

/** Every file under a local destination's directory (for tests and the used-bytes figure of local stores). */
export async function listLocal(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, rel: string) => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory()) await walk(path.join(dir, e.name), `${rel}${e.name}/`);
      else out.push(`${rel}${e.name}`);
    }
  };
  await walk(root, '');
  return out;
}
