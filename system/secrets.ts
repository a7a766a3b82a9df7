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
  /** TOKEN_HMAC_KEY's id (default `env`): tokens' digests name it (access_tokens.key_id). */
  tokenHmacKeyId?: string;
  /** TOKEN_HMAC_KEYS_PREVIOUS: `id:key` pairs, comma-separated, under which older tokens' digests are still found. */
  tokenHmacKeysPrevious?: string;
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

/**
 * A new key's id: its time and a random part. The encryption key and the token key are made in the same
 * millisecond at a first start, and `npm run keys -- retire <id>` names a key by its id alone.
 */
function newKeyId(): string {
  return `k${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
}

/** A key generated once under dataDir/secrets/<file> (mode 0600), never printed. */
function keyFile(dataDir: string, file: string): KeyRecord {
  const dir = join(dataDir, 'secrets');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, file);
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp`;
    const record = { id: newKeyId(), key: randomBytes(32).toString('base64') };
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

/** The two keys: where each is generated, and where a rotation sets the old one aside (`npm run keys`). */
const KINDS = {
  encryption: {
    env: 'ENCRYPTION_KEY',
    previousEnv: 'ENCRYPTION_KEYS_PREVIOUS',
    file: 'encryption-key.json',
    previousFile: 'encryption-keys-previous.json',
  },
  token: {
    env: 'TOKEN_HMAC_KEY',
    previousEnv: 'TOKEN_HMAC_KEYS_PREVIOUS',
    file: 'token-hmac-key.json',
    previousFile: 'token-hmac-keys-previous.json',
  },
} as const;
type KeyKind = keyof typeof KINDS;

/** `id:key,id:key` (each key hex or base64, at least 32 bytes). */
function previousFromEnv(kind: KeyKind, value: string): KeyRecord[] {
  const name = KINDS[kind].previousEnv;
  return value
    .split(',')
    .map((pair) => pair.trim())
    .filter(Boolean)
    .map((pair) => {
      const at = pair.indexOf(':');
      const id = pair.slice(0, at);
      if (at < 1 || !/^[A-Za-z0-9_-]+$/.test(id))
        throw new Error(`${name} holds \`id:key\` pairs separated by commas (an id is letters, digits, _ or -)`);
      const { key } = fromEnv(name, pair.slice(at + 1));
      return { id, key: kind === 'encryption' ? key.subarray(0, 32) : key };
    });
}

function previousFromFile(dataDir: string, kind: KeyKind): KeyRecord[] {
  const path = join(dataDir, 'secrets', KINDS[kind].previousFile);
  if (!existsSync(path)) return [];
  const list = JSON.parse(readFileSync(path, 'utf8')) as Array<{ id: string; key: string }>;
  return list.map((r) => ({ id: r.id, key: Buffer.from(r.key, 'base64') }));
}

function writeSecretFile(dataDir: string, file: string, keys: KeyRecord | KeyRecord[]): void {
  const path = join(dataDir, 'secrets', file);
  const tmp = `${path}.${process.pid}.tmp`;
  const record = (k: KeyRecord) => ({ id: k.id, key: k.key.toString('base64') });
  writeFileSync(tmp, JSON.stringify(Array.isArray(keys) ? keys.map(record) : record(keys)), { mode: 0o600 });
  renameSync(tmp, path);
}

/** A key and the previous ones of its kind, from the environment (both, when the key is there) or DATA_DIR. */
function keyAndPrevious(
  dataDir: string,
  kind: KeyKind,
  given: { key?: string; id?: string; previous?: string },
): { current: KeyRecord; previous: Map<string, Buffer> } {
  const k = KINDS[kind];
  const current = given.key ? fromEnv(k.env, given.key, given.id) : keyFile(dataDir, k.file);
  // (a rotation stopped between its two writes leaves the current key in the file of previous ones too)
  const list = given.key
    ? previousFromEnv(kind, given.previous ?? '')
    : previousFromFile(dataDir, kind).filter((p) => p.id !== current.id);
  const previous = new Map<string, Buffer>();
  for (const p of list) {
    if (p.id === current.id)
      throw new Error(
        `${k.previousEnv} names ${p.id}, the id of the current key: give the new ${k.env} an ${k.env}_ID of its own`,
      );
    previous.set(p.id, p.key);
  }
  return { current, previous };
}

/**
 * A secret that is missing is generated once and kept under dataDir/secrets, never printed.
 * TOKEN_HMAC_KEY and ENCRYPTION_KEY (hex or base64, at least 32 bytes) take precedence; their key id is
 * TOKEN_HMAC_KEY_ID and ENCRYPTION_KEY_ID, else `env`. Older keys still work for what they made:
 * TOKEN_HMAC_KEYS_PREVIOUS and ENCRYPTION_KEYS_PREVIOUS beside the keys, else the ones `rotateKeyFile` set aside
 * (docs/encryption-keys.md).
 */
export function loadSecrets(dataDir: string, o: SecretOverrides = {}): Secrets {
  const token = keyAndPrevious(dataDir, 'token', {
    key: o.tokenHmacKey,
    id: o.tokenHmacKeyId,
    previous: o.tokenHmacKeysPrevious,
  });
  const encryption = keyAndPrevious(dataDir, 'encryption', {
    key: o.encryptionKey,
    id: o.encryptionKeyId,
    previous: o.encryptionKeysPrevious,
  });
  return {
    tokenKey: token.current,
    previousTokenKeys: token.previous,
    encryptionKey: encryption.current,
    previousEncryptionKeys: encryption.previous,
  };
}

/** The secrets a process with these settings holds (system/config.ts names them as SecretOverrides does). */
export function secretsFor(config: SecretOverrides & { dataDir: string }): Secrets {
  return loadSecrets(config.dataDir, config);
}

/**
 * A new generated key of `kind` (`npm run keys -- rotate`): the current one joins the previous keys, which go on
 * working for what they made until `retireKeyFile`. Processes running now keep the key they loaded until they
 * restart. Returns the new key's id and the one set aside.
 */
export function rotateKeyFile(dataDir: string, kind: KeyKind): { id: string; previous: string } {
  const k = KINDS[kind];
  const current = keyFile(dataDir, k.file);
  const previous = previousFromFile(dataDir, kind).filter((p) => p.id !== current.id);
  previous.push(current);
  writeSecretFile(dataDir, k.previousFile, previous);
  let id = newKeyId();
  while (id === current.id || previous.some((p) => p.id === id)) id = newKeyId();
  writeSecretFile(dataDir, k.file, { id, key: randomBytes(32) });
  return { id, previous: current.id };
}

/** Forgets a previous generated key of `kind` (`npm run keys -- retire`); false when no such key is set aside. */
export function retireKeyFile(dataDir: string, kind: KeyKind, id: string): boolean {
  const k = KINDS[kind];
  const previous = previousFromFile(dataDir, kind);
  const kept = previous.filter((p) => p.id !== id);
  if (kept.length === previous.length) return false;
  if (kept.length === 0) rmSync(join(dataDir, 'secrets', k.previousFile), { force: true });
  else writeSecretFile(dataDir, k.previousFile, kept);
  return true;
}
