import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_CHARS = 30; // 30 base62 characters: about 178 random bits
const CHECK_CHARS = 6; // CRC32 in base62 (62^6 > 2^32)

function base62(n: bigint, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62]; // 248 = 4 * 62: no modulo bias
      if (out.length === length) break;
    }
  }
  return out;
}

function checksum(body: string): string {
  return base62(BigInt(crc32(body)), CHECK_CHARS);
}

/** `<prefix>` + random base62 + a CRC32 checksum, so a mistyped string is refused before any lookup. */
export function generateSecret(prefix: 'vcp_' | 'vcs_'): string {
  const body = prefix + randomBase62(RANDOM_CHARS);
  return body + checksum(body);
}

const SHAPE = /^(vcp_|vcs_)[0-9A-Za-z]{36}$/;

/** True when the string has the right prefix, length, alphabet and checksum. */
export function isWellFormed(secret: string, prefix: 'vcp_' | 'vcs_'): boolean {
  if (!SHAPE.test(secret) || !secret.startsWith(prefix)) return false;
  const body = secret.slice(0, -CHECK_CHARS);
  const given = Buffer.from(secret.slice(-CHECK_CHARS));
  const expected = Buffer.from(checksum(body));
  return timingSafeEqual(given, expected);
}

/** Keyed digest of a personal access token: HMAC-SHA-256 under the server key. */
export function tokenDigest(token: string, key: Buffer): string {
  return createHmac('sha256', key).update(token).digest('hex');
}

/** SHA-256 in hex: the stored form of a code or secret that is only ever compared, never shown again. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** Digest of a high-entropy session secret (cookie value or vcs_ bearer). */
export function sessionDigest(secret: string): string {
  return sha256Hex(secret);
}

/** Random URL-safe string for CSRF tokens, codes and ids. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
