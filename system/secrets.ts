import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { join } from 'node:path';

export interface Secrets {
  /** HMAC key for personal access token digests, with the id stored beside each digest (rotation). */
  tokenKey: { id: string; key: Buffer };
  /** Older keys still accepted for verification, by id. */
  previousTokenKeys: Map<string, Buffer>;
}

/**
 * A secret that is missing is generated once and kept under dataDir/secrets, never printed.
 * TOKEN_HMAC_KEY (hex or base64, at least 32 bytes) takes precedence; its key id is `env`.
 */
export function loadSecrets(dataDir: string, tokenHmacKey?: string): Secrets {
  if (tokenHmacKey) {
    const key = /^[0-9a-f]+$/i.test(tokenHmacKey) ? Buffer.from(tokenHmacKey, 'hex') : Buffer.from(tokenHmacKey, 'base64');
    if (key.length < 32) throw new Error('TOKEN_HMAC_KEY must hold at least 32 bytes (64 hex characters)');
    return { tokenKey: { id: 'env', key }, previousTokenKeys: new Map() };
  }
  const dir = join(dataDir, 'secrets');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'token-hmac-key.json');
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    const record = { id: `k${Date.now().toString(36)}`, key: randomBytes(32).toString('base64') };
    writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
    try {
      // Two processes starting at once: the first rename wins; both then read the same file.
      if (!existsSync(file)) renameSync(tmp, file);
    } catch {
      /* another process created it */
    }
  }
  const record = JSON.parse(readFileSync(file, 'utf8')) as { id: string; key: string };
  return { tokenKey: { id: record.id, key: Buffer.from(record.key, 'base64') }, previousTokenKeys: new Map() };
}
