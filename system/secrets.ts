import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
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

/**
 * A secret that is missing is generated once and kept under dataDir/secrets, never printed.
 * TOKEN_HMAC_KEY and ENCRYPTION_KEY (hex or base64, at least 32 bytes) take precedence; their key id is `env`.
 */
export function loadSecrets(dataDir: string, o: SecretOverrides = {}): Secrets {
  return {
    tokenKey: o.tokenHmacKey ? fromEnv('TOKEN_HMAC_KEY', o.tokenHmacKey) : keyFile(dataDir, 'token-hmac-key.json'),
    previousTokenKeys: new Map(),
    encryptionKey: o.encryptionKey
      ? fromEnv('ENCRYPTION_KEY', o.encryptionKey, o.encryptionKeyId)
      : keyFile(dataDir, 'encryption-key.json'),
    previousEncryptionKeys: new Map(),
  };
}
