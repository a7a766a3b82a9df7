/**
 * The hostname of a domain (CONTRACT "Domains"): the name alone, lower-cased, IDNA to punycode
 * (node:url domainToASCII, UTS #46), at least two labels; no scheme, port, path, wildcard or address.
 */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export function normalizeHostname(input: string): { ok: true; hostname: string } | { ok: false; reason: string } {
  const raw = input.trim();
  if (raw === '') return { ok: false, reason: 'must not be empty' };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw))
    return { ok: false, reason: 'must be the hostname alone, without a scheme' };
  if (raw.includes('*')) return { ok: false, reason: 'must not be a wildcard' };
  if (/[/?#]/.test(raw)) return { ok: false, reason: 'must be the hostname alone, without a path' };
  if (raw.includes('@')) return { ok: false, reason: 'must be the hostname alone, without credentials' };
  if (isIP(raw.replace(/^\[|\]$/g, ''))) return { ok: false, reason: 'must be a name, not an address' };
  if (raw.includes(':')) return { ok: false, reason: 'must be the hostname alone, without a port' };
  if (/\s/.test(raw)) return { ok: false, reason: 'must not contain spaces' };
  const ascii = domainToASCII(raw.replace(/\.$/, '')).toLowerCase();
  if (!ascii) return { ok: false, reason: 'is not a valid internationalized domain name' };
  if (ascii.length > 253) return { ok: false, reason: 'must be at most 253 characters' };
  const labels = ascii.split('.');
  if (labels.length < 2) return { ok: false, reason: 'must have at least two labels (like example.com)' };
  if (!labels.every((l) => LABEL.test(l))) {
    return {
      ok: false,
      reason: 'each label must be 1-63 letters, digits or dashes, not starting or ending with a dash',
    };
  }
  if (/^\d+$/.test(labels[labels.length - 1])) return { ok: false, reason: 'must be a name, not an address' };
  return { ok: true, hostname: ascii };
}
