import { randomInt } from 'node:crypto';

/** Letters and digits that cannot be misread for one another (no 0/O, 1/I/L, 5/S, 8/B, 2/Z, vowels). */
export const CONFIRMATION_ALPHABET = 'CDFGHJKMNPQRTVWXY34679';
/** RFC 8628 section 6.1: consonants only, so no words are spelled, and no look-alikes. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

export function randomCode(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** `ABCDEFGH` -> `ABCD-EFGH`, in groups of four. */
export function groupByFour(code: string): string {
  return code.match(/.{1,4}/g)!.join('-');
}

/** What a person typed back: upper-cased, dashes and spaces dropped. */
export function normalizeCode(input: string): string {
  return input.toUpperCase().replace(/[\s-]+/g, '');
}
