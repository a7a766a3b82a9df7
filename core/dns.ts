/**
 * TXT lookups of domain verification, through DNS_SERVERS when set (else the system's resolvers). Used by
 * POST /domains/{id}/verify and by the background re-check activity.
 */
import { Resolver } from 'node:dns/promises';

type TxtAnswer = { ok: true; values: string[] } | { ok: false; reason: string };

const ABSENT = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/** The TXT strings at `name` (each record's chunks joined); an absent name or record is an empty list. */
export async function lookupTxt(servers: string[] | undefined, name: string): Promise<TxtAnswer> {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (servers?.length) resolver.setServers(servers);
  try {
    const records = await resolver.resolveTxt(name);
    return { ok: true, values: records.map((chunks) => chunks.join('')) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (ABSENT.has(code)) return { ok: true, values: [] };
    return { ok: false, reason: `the DNS lookup failed (${code || (err as Error).message})` };
  }
}
