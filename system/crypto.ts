/**
 * Values kept encrypted at rest (variable values, repository and destination credentials, keys):
 * AES-256-GCM under the console's encryption key (system/secrets.ts), a fresh 12-byte nonce each time.
 *
 * Sealed text: `v1.<key id>.<base64url(nonce | ciphertext | tag)>`. The key id lets an older key open
 * what it sealed after a rotation. `aad` binds a value to where it belongs (e.g. a variable's scope and
 * name), so a sealed value copied to another row does not open there.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Secrets } from './secrets';

const NONCE = 12;
const TAG = 16;

export function seal(secrets: Pick<Secrets, 'encryptionKey'>, plaintext: string | Buffer, aad = ''): string {
  const { id, key } = secrets.encryptionKey;
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  if (aad) cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return `v1.${id}.${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url')}`;
}

export function openBuffer(
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>,
  sealed: string,
  aad = '',
): Buffer {
  const [version, keyId, data] = sealed.split('.');
  if (version !== 'v1' || !keyId || data === undefined) throw new Error('not a sealed value');
  const key =
    keyId === secrets.encryptionKey.id ? secrets.encryptionKey.key : secrets.previousEncryptionKeys.get(keyId);
  if (!key) throw new Error(`sealed with an unknown key (${keyId})`);
  const raw = Buffer.from(data, 'base64url');
  if (raw.length < NONCE + TAG) throw new Error('sealed value is too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE));
  if (aad) decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(raw.subarray(raw.length - TAG));
  return Buffer.concat([decipher.update(raw.subarray(NONCE, raw.length - TAG)), decipher.final()]);
}

export function open(
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>,
  sealed: string,
  aad = '',
): string {
  return openBuffer(secrets, sealed, aad).toString('utf8');
}

/** The id of the key a sealed value was sealed under (`v1.<key id>.…`). */
export function sealedKeyId(sealed: string): string {
  return sealed.split('.')[1] ?? '';
}

/** The byte length of what `sealed` holds, read from its size alone (nothing is opened). */
export function sealedLength(sealed: string): number {
  const data = sealed.split('.')[2] ?? '';
  return Math.max(0, Buffer.byteLength(data, 'base64url') - NONCE - TAG);
}
