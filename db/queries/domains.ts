/**
 * The verification check of a domain, shared by POST /domains/{id}/verify and the background re-check:
 * looks `_vc-verify.<hostname>` up and marks the domain verified when a TXT record holds its value.
 */
import type { Knex } from 'knex';
import { lookupTxt } from '../../api/lib/dns';

export const VERIFY_PREFIX = '_vc-verify.';

export type CheckOutcome =
  | { status: 'verified' /** This check made it verified (it was pending). */; changed: boolean }
  | { status: 'pending'; reason?: string }
  | { status: 'gone' };

export async function checkDomain(
  knex: Knex,
  dnsServers: string[] | undefined,
  domainId: string,
): Promise<CheckOutcome> {
  const domain = await knex('domains').where({ id: domainId }).first();
  if (!domain) return { status: 'gone' };
  if (domain.status === 'verified') return { status: 'verified', changed: false };
  const answer = await lookupTxt(dnsServers, `${VERIFY_PREFIX}${domain.hostname}`);
  const verified = answer.ok && answer.values.includes(domain.verification_value);
  if (verified) {
    // Only the check that moves it from pending says it changed (a concurrent check finds it done).
    const moved = await knex('domains').where({ id: domainId }).whereNot({ status: 'verified' }).update({
      last_checked_at: knex.fn.now(),
      status: 'verified',
      verified_at: knex.fn.now(),
      updated_at: knex.fn.now(),
    });
    return { status: 'verified', changed: moved > 0 };
  }
  await knex('domains').where({ id: domainId }).update({ last_checked_at: knex.fn.now(), updated_at: knex.fn.now() });
  return {
    status: 'pending',
    reason: answer.ok
      ? answer.values.length
        ? 'the TXT record holds another value'
        : 'no TXT record yet'
      : answer.reason,
  };
}
