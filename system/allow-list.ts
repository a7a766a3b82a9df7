/**
 * OUTBOUND_ALLOWED_HOSTS, parsed: read by the configuration (system/config.ts, which refuses a bad entry at
 * start) and by the outbound guard (host/outbound.ts).
 */
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

export interface AllowList {
  hosts: Set<string>;
  cidrs: Array<[Address, number]>;
}

export const HOST_NAME =
  /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** OUTBOUND_ALLOWED_HOSTS entries: host names, IP addresses, CIDRs. Throws on an entry that is none. */
export function parseAllowList(entries: readonly string[]): AllowList {
  const list: AllowList = { hosts: new Set(), cidrs: [] };
  for (const raw of entries) {
    const entry = raw
      .trim()
      .toLowerCase()
      .replace(/^\[(.*)\]$/, '$1');
    if (entry.includes('/')) {
      try {
        list.cidrs.push(ipaddr.parseCIDR(entry));
      } catch {
        throw new Error(`OUTBOUND_ALLOWED_HOSTS: "${raw}" is not a valid CIDR`);
      }
    } else if (ipaddr.isValid(entry)) {
      const addr = ipaddr.parse(entry);
      list.cidrs.push([addr, addr.kind() === 'ipv4' ? 32 : 128]);
    } else if (HOST_NAME.test(entry.replace(/\.$/, ''))) {
      list.hosts.add(entry.replace(/\.$/, ''));
    } else {
      throw new Error(`OUTBOUND_ALLOWED_HOSTS: "${raw}" is not a host name, an address or a CIDR`);
    }
  }
  return list;
}
