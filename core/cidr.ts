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

export type CidrMatcher = (address: string | undefined) => boolean;

/** A matcher of any of the CIDRs (already normalized). */
export function cidrMatcher(cidrs: string[]): CidrMatcher {
  const ranges = cidrs.map((c) => ipaddr.parseCIDR(c));
  return (address) => {
    if (!address || ranges.length === 0) return false;
    let addr: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      addr = ipaddr.process(address);
    } catch {
      return false;
    }
    return ranges.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net as never, bits));
  };
}
