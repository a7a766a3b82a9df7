/**
 * The verification check of a domain, shared by POST /domains/{id}/verify and the background re-check:
 * looks `_vc-verify.<hostname>` up and marks the domain verified when a TXT record holds its value.
 */
import type { Knex } from 'knex';
import { lookupTxt } from '../../api/lib/dns';

export const VERIFY_PREFIX = '_vc-verify.';

export type CheckOutcome = { status: 'verified' | 'pending'; reason?: string } | { status: 'gone' };

export async function checkDomain(
  knex: Knex,
  dnsServers: string[] | undefined,
  domainId: string,
): Promise<CheckOutcome> {
  const domain = await knex('domains').where({ id: domainId }).first();
  if (!domain) return { status: 'gone' };
  if (domain.status === 'verified') return { status: 'verified' };
  const answer = await lookupTxt(dnsServers, `${VERIFY_PREFIX}${domain.hostname}`);
  const verified = answer.ok && answer.values.includes(domain.verification_value);
  await knex('domains')
    .where({ id: domainId })
    .update({
      last_checked_at: knex.fn.now(),
      ...(verified ? { status: 'verified', verified_at: knex.fn.now() } : {}),
      updated_at: knex.fn.now(),
    });
  if (verified) return { status: 'verified' };
  return {
    status: 'pending',
    reason: answer.ok
      ? answer.values.length
        ? 'the TXT record holds another value'
        : 'no TXT record yet'
      : answer.reason,
  };
}
