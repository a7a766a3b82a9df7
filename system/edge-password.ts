/**
 * The environment edge's Basic password as HAProxy checks it (docs/edge-password-and-logs.md): a keyed
 * HMAC-SHA256 of `username:password` (the exact bytes a client base64-encodes in `Authorization: Basic`).
 * The key is derived (HKDF-SHA256) from the console's encryption key, so it needs no secret of its own, and
 * its id is the encryption key's id: a digest made under an older key is not used (the edge checks the
 * argon2id hash once more and makes a new digest). The clear password is never kept: the API makes the
 * digest at PATCH time, the edge's checker when it verifies an older row's argon2id hash.
 */
import { createHmac, hkdfSync } from 'node:crypto';
import type { Secrets } from './secrets';

interface EdgePasswordKey {
  id: string;
  key: Buffer;
}

const INFO = 'vc edge basic password v1';

export function edgePasswordKey(secrets: Pick<Secrets, 'encryptionKey'>): EdgePasswordKey {
  const { id, key } = secrets.encryptionKey;
  return { id, key: Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), INFO, 32)) };
}

/** Lower-case hex of HMAC-SHA256(key, `username:password`), what HAProxy computes from the header. */
export function edgePasswordDigest(key: EdgePasswordKey, username: string, password: string): string {
  return createHmac('sha256', key.key).update(`${username}:${password}`, 'utf8').digest('hex');
}
