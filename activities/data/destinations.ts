/**
 * Backup destinations as object stores: `local` (a directory outside DATA_DIR) and `s3` (any S3-compatible
 * store, path-style addressing). Objects are streamed both ways; a `put` that fails leaves no object behind
 * (local: written to `<name>.partial`, renamed when complete; s3: a multipart upload, aborted on failure).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import http from 'node:http';
import https from 'node:https';
import { checkOutboundHost, guardedLookup, type OutboundConfig } from '../provider/outbound';

export interface LocalSettings {
  path: string;
}
export interface S3Settings {
  endpoint: string;
  region: string;
  bucket: string;
  prefix?: string;
}
export interface S3Secrets {
  access_key_id: string;
  secret_access_key: string;
}
export type DestinationSpec =
  | { kind: 'local'; settings: LocalSettings; secrets?: undefined }
  | { kind: 's3'; settings: S3Settings; secrets: S3Secrets };

export interface ObjectStore {
  /** Streams the body to `key`; resolves with the bytes written once the object is complete. */
  put(key: string, body: AsyncIterable<Buffer> | Readable, signal?: AbortSignal): Promise<number>;
  get(key: string): Promise<Readable>;
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

class LocalStore implements ObjectStore {
  constructor(private readonly root: string) {}
  private file(key: string) {
    return path.join(this.root, ...safeKey(key).split('/'));
  }
  async put(key: string, body: AsyncIterable<Buffer> | Readable, signal?: AbortSignal): Promise<number> {
    const file = this.file(key);
    const partial = `${file}.partial`;
    await mkdir(path.dirname(file), { recursive: true });
    try {
      await pipeline(
        body instanceof Readable ? body : Readable.from(body),
        createWriteStream(partial, { mode: 0o600 }),
        { signal },
      );
      await rename(partial, file);
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
    return (await stat(file)).size;
  }
  async get(key: string): Promise<Readable> {
    const file = this.file(key);
    await stat(file); // ENOENT now rather than on the first read
    return createReadStream(file);
  }
  /** Removes the object and any half of it that a killed writer left (`<name>.partial`). */
  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
    await rm(`${this.file(key)}.partial`, { force: true });
  }
  close() {}
}

/**
 * An S3-compatible store, reached through the outbound guard (activities/provider/outbound.ts): the
 * endpoint's host is checked before the first request (address literals never go through a DNS lookup) and
 * every connection's own lookup is guarded, so an endpoint on loopback or a private network is refused
 * unless OUTBOUND_ALLOWED_HOSTS lists it.
 */
class S3Store implements ObjectStore {
  private readonly client: S3Client;
  private checked: Promise<unknown> | undefined;
  constructor(
    private readonly settings: S3Settings,
    secrets: S3Secrets,
    private readonly outbound: OutboundConfig,
  ) {
    const lookup = guardedLookup(outbound);
    this.client = new S3Client({
      requestHandler: { httpAgent: new http.Agent({ lookup }), httpsAgent: new https.Agent({ lookup }) },
      endpoint: settings.endpoint,
      region: settings.region,
      forcePathStyle: true,
      credentials: { accessKeyId: secrets.access_key_id, secretAccessKey: secrets.secret_access_key },
      maxAttempts: 2,
    });
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
    let bytes = 0;
    const counted = (body instanceof Readable ? body : Readable.from(body)).on(
      'data',
      (c: Buffer) => (bytes += c.length),
    );
    const upload = new Upload({
      client: this.client,
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
  async get(key: string): Promise<Readable> {
    await this.guard();
    const out = await this.client.send(new GetObjectCommand({ Bucket: this.settings.bucket, Key: this.key(key) }));
    return out.Body as Readable;
  }
  async delete(key: string): Promise<void> {
    await this.guard();
    await this.client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.key(key) }));
  }
  close() {
    this.client.destroy();
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
export type StoreField = 'endpoint' | 'bucket' | 'access_key_id' | 'secret_access_key';

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
export function storeErrorFields(err: unknown): StoreField[] {
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
export function describeStoreError(err: unknown): string {
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
