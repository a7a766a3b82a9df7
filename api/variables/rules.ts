/** The variable rules of CONTRACT "Variables", shared by the request schemas and the `.env` reading. */
const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_NAME_LENGTH = 128;
const MAX_VALUE_BYTES = 64 * 1024;
export const MAX_PER_SCOPE = 500;

/** Reserved: the platform sets them (PORT) or keeps them for itself (VC_*). */
function isReserved(name: string): boolean {
  return name === 'PORT' || name.startsWith('VC_');
}

/** Why a name is refused, or null. */
export function checkVariableName(name: string): string | null {
  if (name.length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters`;
  if (!NAME_PATTERN.test(name)) return 'must be letters, digits and _, not starting with a digit';
  if (isReserved(name)) return 'is reserved (PORT and names starting VC_ are set by the platform)';
  return null;
}

/** Why a value is refused, or null. */
export function checkVariableValue(value: string): string | null {
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES) return 'must be at most 64 KiB';
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  return null;
}

/** The whole environment of a process (every scope and the built-ins): `NAME=value\0` of each, at most this. */
export const MAX_ENVIRONMENT_BYTES = 1024 * 1024;
/**
 * Kept for the built-ins (PATH, LANG, HOME, PORT, a service's DATABASE_URL, the volume's path, VC_*): they
 * are a few hundred bytes, and the user's variables may use the rest.
 */
const BUILT_IN_RESERVE_BYTES = 16 * 1024;
export const MAX_USER_ENVIRONMENT_BYTES = MAX_ENVIRONMENT_BYTES - BUILT_IN_RESERVE_BYTES;

/** What one variable adds to a process's environment block (`NAME=value` and its NUL). */
export function environmentEntryBytes(name: string, valueBytes: number): number {
  return Buffer.byteLength(name) + 1 + valueBytes + 1;
}
