/**
 * The release store (CONTRACT "Hosts", docs/hosts.md): where a built release is kept, packed, so that any host
 * can start it. An operator setting (RELEASE_STORE, S3_*), never a team's destination: its requests do not go
 * through the tenant outbound guard (host/outbound.ts), and its credentials are never in a message.
 *
 * - A directory (default DATA_DIR/releases) serves one machine only: it holds a marker with the id of the
 *   machine that made it (`/etc/machine-id`), and a worker on another machine refuses it (checkReleaseStore).
 * - `s3://bucket/prefix` with S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: every host.
 *
 * Objects are `<environment id>/<release id>.tar.gz`; their digest is recorded with the release
 * (`releases.archive_sha256`) and checked by the host that fetches one (host/provider/release-archive.ts).
 */
import { createReadStream, createWriteStream, existsSync, readFileSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { hostname } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { ReleaseStoreConfig } from '../system/config';

export interface ReleaseStore {
  readonly kind: 'directory' | 's3';
  /** What the operator set (a directory, or s3://bucket/prefix): never a credential. */
  readonly location: string;
  /** Puts a local file at `key` (replacing what was there). */
  put(key: string, file: string): Promise<void>;
  /** Copies the object at `key` into a local file: false when the store has none. */
  get(key: string, file: string): Promise<boolean>;
  /** Deletes the object at `key` (none: nothing to do). */
  delete(key: string): Promise<void>;
  /** Deletes every object under `prefix/`. */
  deleteUnder(prefix: string): Promise<void>;
}

/** A fault of the store itself (unreachable, refused): its message names the store, never its credentials. */
export class ReleaseStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReleaseStoreError';
  }
}

/** The key of a release's archive in the store. */
export function releaseKey(envId: string, releaseId: string): string {
  return `${segment(envId)}/${segment(releaseId)}.tar.gz`;
}

/** The prefix of an environment's archives. */
export function environmentKey(envId: string): string {
  return segment(envId);
}

function segment(s: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(s)) throw new ReleaseStoreError(`not a release store key segment: ${s}`);
  return s;
}

export function createReleaseStore(config: ReleaseStoreConfig): ReleaseStore {
  return config.location.startsWith('s3://') ? new S3ReleaseStore(config) : new DirectoryReleaseStore(config.location);
}

// ------------------------------------------------------------------------------------------------------
// One machine: a directory

/** The marker a directory store holds: the machine that made it. */
export const STORE_MARKER = '.vc-release-store.json';

/** This machine's id (systemd's /etc/machine-id; else the hostname). */
export function machineId(): string {
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = readFileSync(file, 'utf8').trim();
      if (id) return id;
    } catch {
      // next
    }
  }
  return `hostname:${hostname()}`;
}

/**
 * Checks that this machine may use the store, before a worker takes any work. A directory store is this
 * machine's when its marker names this machine. `create` (npm start's worker, the control plane's machine)
 * makes the directory and its marker when they are absent; a host agent alone (`npm run host`) never does:
 * a directory it did not find marked by this machine is another machine's, or no store at all. Throws a
 * ReleaseStoreError saying what to do. An s3 store is every machine's.
 */
export async function checkReleaseStore(config: ReleaseStoreConfig, o: { create: boolean }): Promise<void> {
  if (config.location.startsWith('s3://')) {
    if (!config.s3.endpoint || !config.s3.accessKeyId || !config.s3.secretAccessKey)
      throw new ReleaseStoreError(
        `RELEASE_STORE ${config.location} needs S3_ENDPOINT, S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY (and S3_REGION)`,
      );
    return;
  }
  const dir = config.location;
  const here = machineId();
  const markerFile = path.join(dir, STORE_MARKER);
  let marker: { machineId?: string } | null = null;
  try {
    marker = JSON.parse(await readFile(markerFile, 'utf8'));
  } catch {
    marker = null;
  }
  const useS3 =
    'A directory store serves one machine only: to run hosts on several machines, set RELEASE_STORE=s3://bucket/prefix ' +
    'with S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY on the control plane and on every host.';
  if (marker && marker.machineId !== here)
    throw new ReleaseStoreError(`RELEASE_STORE ${dir} is a directory made on another machine. ${useS3}`);
  if (marker) return;
  if (!o.create)
    throw new ReleaseStoreError(
      `RELEASE_STORE ${dir} is not a release store made on this machine (npm start makes it on the control plane's machine). ${useS3}`,
    );
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const tmp = `${markerFile}.tmp-${process.pid}`;
  await writeFile(tmp, JSON.stringify({ machineId: here, createdAt: new Date().toISOString() }), { mode: 0o600 });
  await rename(tmp, markerFile);
}

class DirectoryReleaseStore implements ReleaseStore {
  readonly kind = 'directory' as const;
  constructor(readonly location: string) {}
  private file(key: string) {
    return path.join(this.location, ...key.split('/'));
  }
  async put(key: string, file: string): Promise<void> {
    const target = this.file(key);
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const tmp = `${target}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    try {
      await copyFile(file, tmp);
      await chmod(tmp, 0o600);
      await rename(tmp, target);
    } finally {
      await rm(tmp, { force: true });
    }
  }
  async get(key: string, file: string): Promise<boolean> {
    const source = this.file(key);
    if (!existsSync(source)) return false;
    await copyFile(source, file);
    return true;
  }
  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }
  async deleteUnder(prefix: string): Promise<void> {
    await rm(this.file(prefix), { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------------------
// Every machine: S3

class S3ReleaseStore implements ReleaseStore {
  readonly kind = 's3' as const;
  readonly location: string;
  private readonly bucket: string;
  private readonly prefix: string;
  private sdk: Promise<{ s3: typeof import('@aws-sdk/client-s3'); client: S3Client }> | undefined;
  constructor(private readonly config: ReleaseStoreConfig) {
    this.location = config.location;
    const [bucket, ...rest] = config.location.slice('s3://'.length).split('/');
    this.bucket = bucket;
    this.prefix = rest.filter(Boolean).join('/');
  }
  private connect() {
    // The operator's endpoint, as PITR_REPOSITORY's: not a tenant's, so not through the outbound guard.
    this.sdk ??= import('@aws-sdk/client-s3').then((s3) => {
      const { endpoint, region, accessKeyId, secretAccessKey, caFile } = this.config.s3;
      const client = new s3.S3Client({
        // S3_CA_FILE: the CA of a store of the operator's own
        ...(caFile ? { requestHandler: { httpsAgent: new https.Agent({ ca: readFileSync(caFile) }) } } : {}),
        endpoint,
        region: region ?? 'us-east-1',
        forcePathStyle: true,
        // plain bodies (no aws-chunked trailers): S3-compatible stores that do not speak them keep the bytes as sent
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        credentials: { accessKeyId: accessKeyId ?? '', secretAccessKey: secretAccessKey ?? '' },
        maxAttempts: 3,
      });
      return { s3, client };
    });
    return this.sdk;
  }
  private key(key: string) {
    return this.prefix ? `${this.prefix}/${key}` : key;
  }
  /** The SDK's fault, as a message naming the store and the object (the SDK's messages hold no credential). */
  private fault(op: string, key: string, err: unknown): ReleaseStoreError {
    const e = err as { name?: string; message?: string };
    return new ReleaseStoreError(
      `release store ${this.location}: ${op} ${key} failed: ${e.name ?? 'Error'}: ${e.message ?? String(err)}`,
    );
  }
  async put(key: string, file: string): Promise<void> {
    const { s3, client } = await this.connect();
    const { size } = await stat(file);
    try {
      await client.send(
        new s3.PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key(key),
          Body: createReadStream(file),
          ContentLength: size,
        }),
      );
    } catch (err) {
      throw this.fault('put', key, err);
    }
  }
  async get(key: string, file: string): Promise<boolean> {
    const { s3, client } = await this.connect();
    try {
      const r = await client.send(new s3.GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
      await pipeline(r.Body as NodeJS.ReadableStream, createWriteStream(file, { mode: 0o600 }));
      return true;
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return false;
      throw this.fault('get', key, err);
    }
  }
  async delete(key: string): Promise<void> {
    const { s3, client } = await this.connect();
    try {
      await client.send(new s3.DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
    } catch (err) {
      throw this.fault('delete', key, err);
    }
  }
  async deleteUnder(prefix: string): Promise<void> {
    const { s3, client } = await this.connect();
    let token: string | undefined;
    try {
      do {
        const page = await client.send(
          new s3.ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: `${this.key(prefix)}/`,
            ContinuationToken: token,
          }),
        );
        for (const o of page.Contents ?? [])
          if (o.Key) await client.send(new s3.DeleteObjectCommand({ Bucket: this.bucket, Key: o.Key }));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    } catch (err) {
      throw this.fault('delete', `${prefix}/`, err);
    }
  }
}
