import { createHash, createPublicKey } from 'node:crypto';

/** An OpenSSH public key, checked and normalised. */
export interface SshPublicKey {
  type: string;
  /** The decoded key blob. */
  blob: Buffer;
  /** `<type> <base64>[ <comment>]`, one line. */
  normalized: string;
  /** `SHA256:<base64 of sha256(blob), no padding>`, as `ssh-keygen -lf` prints it. */
  fingerprint: string;
}

type ParseResult = { ok: true; key: SshPublicKey } | { ok: false; reason: string };

const CURVES: Record<string, { jwk: string; pointBytes: number }> = {
  nistp256: { jwk: 'P-256', pointBytes: 65 },
  nistp384: { jwk: 'P-384', pointBytes: 97 },
  nistp521: { jwk: 'P-521', pointBytes: 133 },
};

const SUPPORTED_TYPES = [
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
] as const;

const MIN_RSA_BITS = 2048;

class Reader {
  private at = 0;
  constructor(private readonly buf: Buffer) {}
  bytes(): Buffer {
    if (this.at + 4 > this.buf.length) throw new Error('truncated');
    const len = this.buf.readUInt32BE(this.at);
    this.at += 4;
    if (len > this.buf.length - this.at) throw new Error('truncated');
    const out = this.buf.subarray(this.at, this.at + len);
    this.at += len;
    return out;
  }
  string(): string {
    return this.bytes().toString('latin1');
  }
  done(): boolean {
    return this.at === this.buf.length;
  }
}

function fail(reason: string): ParseResult {
  return { ok: false, reason };
}

/** Bits of an SSH mpint (big-endian two's complement, positive here). */
function mpintBits(bytes: Buffer): number {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  if (i === bytes.length) return 0;
  return (bytes.length - i - 1) * 8 + (32 - Math.clz32(bytes[i]));
}

function ecPointValid(curve: string, point: Buffer): boolean {
  const c = CURVES[curve];
  if (!c || point.length !== c.pointBytes || point[0] !== 0x04) return false;
  const half = (point.length - 1) / 2;
  try {
    createPublicKey({
      format: 'jwk',
      key: {
        kty: 'EC',
        crv: c.jwk,
        x: point.subarray(1, 1 + half).toString('base64url'),
        y: point.subarray(1 + half).toString('base64url'),
      },
    });
    return true;
  } catch {
    return false;
  }
}

/** Checks the structure of the blob for its type; returns a reason when it is not a usable key. */
function checkBlob(type: string, r: Reader): string | undefined {
  switch (type) {
    case 'ssh-ed25519':
      if (r.bytes().length !== 32) return 'is not a valid ssh-ed25519 key';
      break;
    case 'sk-ssh-ed25519@openssh.com':
      if (r.bytes().length !== 32) return 'is not a valid sk-ssh-ed25519 key';
      r.string(); // application
      break;
    case 'ssh-rsa': {
      const e = r.bytes();
      const n = r.bytes();
      if (mpintBits(e) === 0 || (e[e.length - 1] & 1) === 0) return 'is not a valid ssh-rsa key';
      const bits = mpintBits(n);
      if (bits < MIN_RSA_BITS) return `is an RSA key of ${bits} bits; at least ${MIN_RSA_BITS} are needed`;
      break;
    }
    default: {
      // ecdsa-sha2-nistpNNN and sk-ecdsa-sha2-nistp256@openssh.com
      const expected = /^(?:sk-)?ecdsa-sha2-(nistp\d+)/.exec(type)?.[1];
      const curve = r.string();
      if (curve !== expected) return `names curve ${curve.slice(0, 20)} inside a ${type} key`;
      if (!ecPointValid(curve, r.bytes())) return `is not a valid ${type} key`;
      if (type.startsWith('sk-')) r.string(); // application
    }
  }
  if (!r.done()) return 'has unexpected data after the key';
  return undefined;
}

/**
 * Reads one OpenSSH public key line (`<type> <base64> [comment]`), as in `id_ed25519.pub`.
 * The type inside the base64 blob must match the one in front of it.
 */
export function parseSshPublicKey(input: string): ParseResult {
  const line = input.trim();
  if (!line) return fail('is required');
  if (/[\r\n]/.test(line)) return fail('must be a single public key on one line');
  if (/[^\P{Cc}\t]/u.test(line)) return fail('must not contain control characters');
  const [type, b64, ...rest] = line.split(/[ \t]+/);
  if (!(SUPPORTED_TYPES as readonly string[]).includes(type)) {
    if (/PRIVATE KEY/.test(line)) return fail('is a private key; paste the public key (the .pub file) instead');
    return fail(`must be an OpenSSH public key of type ${SUPPORTED_TYPES.join(', ')}`);
  }
  if (!b64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) return fail('has no valid base64 key data');
  const blob = Buffer.from(b64, 'base64');
  if (blob.toString('base64') !== b64) return fail('has no valid base64 key data');
  const reader = new Reader(blob);
  let reason: string | undefined;
  try {
    const inner = reader.string();
    if (inner !== type) return fail(`says ${type} but the key data is ${inner.slice(0, 40) || 'of no type'}`);
    reason = checkBlob(type, reader);
  } catch {
    reason = 'has truncated key data';
  }
  if (reason) return fail(reason);
  const comment = rest.join(' ');
  const fingerprint = 'SHA256:' + createHash('sha256').update(blob).digest('base64').replace(/=+$/, '');
  return { ok: true, key: { type, blob, normalized: [type, b64, comment].filter(Boolean).join(' '), fingerprint } };
}
