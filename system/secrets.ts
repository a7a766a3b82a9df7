import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface KeyRecord {
  id: string;
  key: Buffer;
}

export interface Secrets {
  /** HMAC key for personal access token digests, with the id stored beside each digest (rotation). */
  tokenKey: KeyRecord;
  /** Older keys still accepted for verification, by id. */
  previousTokenKeys: Map<string, Buffer>;
  /** AES-256-GCM key for values kept encrypted at rest (system/crypto.ts), with its id. */
  encryptionKey: KeyRecord;
  /** Older encryption keys still accepted for decryption, by id. */
  previousEncryptionKeys: Map<string, Buffer>;
}

interface SecretOverrides {
  tokenHmacKey?: string;
  encryptionKey?: string;
  /** ENCRYPTION_KEY's id (default `env`): the control plane's, on a host agent (values sealed under it name it). */
  encryptionKeyId?: string;
  /** ENCRYPTION_KEYS_PREVIOUS: `id:key` pairs, comma-separated, that open what they sealed and seal nothing. */
  encryptionKeysPrevious?: string;
}

function fromEnv(name: string, value: string, id = 'env'): KeyRecord {
  const key = /^[0-9a-f]+$/i.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length < 32) throw new Error(`${name} must hold at least 32 bytes (64 hex characters)`);
  // AES-256 takes exactly 32 bytes; an HMAC key may be longer.
  return { id, key: name === 'ENCRYPTION_KEY' ? key.subarray(0, 32) : key };
}

/** A key generated once under dataDir/secrets/<file> (mode 0600), never printed. */
function keyFile(dataDir: string, file: string): KeyRecord {
  const dir = join(dataDir, 'secrets');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, file);
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp`;
    const record = { id: `k${Date.now().toString(36)}`, key: randomBytes(32).toString('base64') };
    writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
    try {
      // Two processes starting at once: the first rename wins; both then read the same file.
      if (!existsSync(path)) renameSync(tmp, path);
    } catch {
      /* another process created it */
    }
  }
  const record = JSON.parse(readFileSync(path, 'utf8')) as { id: string; key: string };
  return { id: record.id, key: Buffer.from(record.key, 'base64') };
}

const ENCRYPTION_KEY_FILE = 'encryption-key.json';
/** The generated keys an `npm run keys -- rotate` set aside: they open what they sealed, and seal nothing. */
const PREVIOUS_KEYS_FILE = 'encryption-keys-previous.json';

/** ENCRYPTION_KEYS_PREVIOUS: `id:key,id:key` (each key hex or base64, at least 32 bytes). */
function previousFromEnv(value: string): KeyRecord[] {
  return value
    .split(',')
    .map((pair) => pair.trim())
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf(':');
      const id = pair.slice(0, at);
      if (at < 1 || !/^[A-Za-z0-9_-]+$/.test(id))
        throw new Error(
          'ENCRYPTION_KEYS_PREVIOUS holds `id:key` pairs separated by commas (an id is letters, digits, _ or -)',
        );
      const { key } = fromEnv('ENCRYPTION_KEYS_PREVIOUS', pair.slice(at + 1));
      return { id, key: key.subarray(0, 32) };
    });
}

function previousFromFile(dataDir: string): KeyRecord[] {
  const path = join(dataDir, 'secrets', PREVIOUS_KEYS_FILE);
  if (!existsSync(path)) return [];
  const list = JSON.parse(readFileSync(path, 'utf8')) as Array<{ id: string; key: string }>;
  return list.map((r) => ({ id: r.id, key: Buffer.from(r.key, 'base64') }));
}

function writeSecretFile(dataDir: string, file: string, contents: string): void {
  const path = join(dataDir, 'secrets', file);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, contents, { mode: 0o600 });
  renameSync(tmp, path);
}

/**
 * A secret that is missing is generated once and kept under dataDir/secrets, never printed.
 * TOKEN_HMAC_KEY and ENCRYPTION_KEY (hex or base64, at least 32 bytes) take precedence; their key id is `env`.
 * Older encryption keys open what they sealed: ENCRYPTION_KEYS_PREVIOUS beside ENCRYPTION_KEY, else the ones
 * `rotateEncryptionKeyFile` set aside (docs/encryption-keys.md).
 */
export function loadSecrets(dataDir: string, o: SecretOverrides = {}): Secrets {
  const encryptionKey = o.encryptionKey
    ? fromEnv('ENCRYPTION_KEY', o.encryptionKey, o.encryptionKeyId)
    : keyFile(dataDir, ENCRYPTION_KEY_FILE);
  const previous = o.encryptionKey ? previousFromEnv(o.encryptionKeysPrevious ?? '') : previousFromFile(dataDir);
  const previousEncryptionKeys = new Map<string, Buffer>();
  for (const k of previous) {
    if (k.id === encryptionKey.id)
      throw new Error(
        `ENCRYPTION_KEYS_PREVIOUS names ${k.id}, the id of the current key: give the new ENCRYPTION_KEY an ENCRYPTION_KEY_ID of its own`,
      );
    previousEncryptionKeys.set(k.id, k.key);
  }
  return {
    tokenKey: o.tokenHmacKey ? fromEnv('TOKEN_HMAC_KEY', o.tokenHmacKey) : keyFile(dataDir, 'token-hmac-key.json'),
    previousTokenKeys: new Map(),
    encryptionKey,
    previousEncryptionKeys,
  };
}

/** The secrets a process with these settings holds (system/config.ts). */
export function secretsFor(config: {
  dataDir: string;
  tokenHmacKey?: string;
  encryptionKey?: string;
  encryptionKeyId?: string;
  encryptionKeysPrevious?: string;
}): Secrets {
  return loadSecrets(config.dataDir, {
    tokenHmacKey: config.tokenHmacKey,
    encryptionKey: config.encryptionKey,
    encryptionKeyId: config.encryptionKeyId,
    encryptionKeysPrevious: config.encryptionKeysPrevious,
  });
}

/**
 * A new generated encryption key (`npm run keys -- rotate`): the current one joins the previous keys, which open
 * what they sealed until `retireEncryptionKeyFile`. Processes running now go on with the key they loaded until
 * they restart. Returns the new key's id and the one set aside.
 */
export function rotateEncryptionKeyFile(dataDir: string): { id: string; previous: string } {
  const current = keyFile(dataDir, ENCRYPTION_KEY_FILE);
  const previous = previousFromFile(dataDir).filter((k) => k.id !== current.id);
  previous.push(current);
  writeSecretFile(
    dataDir,
    PREVIOUS_KEYS_FILE,
    JSON.stringify(previous.map((k) => ({ id: k.id, key: k.key.toString('base64') }))),
  );
  // a new id even within the same millisecond as the last one's
  let id = `k${Date.now().toString(36)}`;
  if (id === current.id || previous.some((k) => k.id === id)) id += randomBytes(2).toString('hex');
  writeSecretFile(dataDir, ENCRYPTION_KEY_FILE, JSON.stringify({ id, key: randomBytes(32).toString('base64') }));
  return { id, previous: current.id };
}

/** Forgets a previous generated key (`npm run keys -- retire`); false when no such key is set aside. */
export function retireEncryptionKeyFile(dataDir: string, id: string): boolean {
  const previous = previousFromFile(dataDir);
  const kept = previous.filter((k) => k.id !== id);
  if (kept.length === previous.length) return false;
  if (kept.length === 0) rmSync(join(dataDir, 'secrets', PREVIOUS_KEYS_FILE), { force: true });
  else
    writeSecretFile(
      dataDir,
      PREVIOUS_KEYS_FILE,
      JSON.stringify(kept.map((k) => ({ id: k.id, key: k.key.toString('base64') }))),
    );
  return true;
}
