/**
 * CIDR lists of the edge's rules (ipaddr.js): written as given (a bare address is its own /32 or /128),
 * matched against the client address (an IPv4-mapped IPv6 address counts as IPv4).
 */
import ipaddr from 'ipaddr.js';

/** The normalized CIDR, or null when `text` is neither a CIDR nor an address. */
export function normalizeCidr(text: string): string | null {
  const s = text.trim();
  try {
    if (ipaddr.isValidCIDR(s)) {
      const [addr, bits] = ipaddr.parseCIDR(s);
      return `${addr.toString()}/${bits}`;
    }
    if (ipaddr.isValid(s)) {
      const addr = ipaddr.parse(s);
      return `${addr.toString()}/${addr.kind() === 'ipv4' ? 32 : 128}`;
    }
  } catch {
    return null;
  }
  return null;
}
