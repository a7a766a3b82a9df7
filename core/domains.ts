/**
 * The verification check of a domain, shared by POST /domains/{id}/verify and the background re-check:
 * looks `_vc-verify.<hostname>` up and marks the domain verified when a TXT record holds its value.
 *
 * Claims (CONTRACT "Domains"): pending claims of one hostname by different teams stand side by side; the
 * first to verify keeps the name and every other claim of it is deleted, with an activity event in its
 * team; a claim still pending 7 days after it was added expires (deleted, with an event) at its next check,
 * or by the daily `prune-expired` run. Every change of a hostname's claims holds its advisory lock.
 */
import type { Knex } from 'knex';
import { lookupTxt } from './dns';
import { emitDomainVerified } from './integration-events';
import { mailProjectEvent } from './event-emails';
import type { Logger } from '../system/logger';
import type { Mailer } from '../system/mail/transport';
import { recordActivity } from '../db/queries/activity';
import type { DomainRow } from '../db/queries/domains';

export const VERIFY_PREFIX = '_vc-verify.';
const PENDING_CLAIM_DAYS = 7;
const DAY_MS = 86_400_000;

export type CheckOutcome =
  | { status: 'verified' /** This check made it verified (it was pending). */; changed: boolean }
  | { status: 'pending'; reason?: string }
  | { status: 'gone' };

/** Serializes every change of one hostname's claims (adding, verifying, expiring) until the transaction ends. */
export async function lockHostname(trx: Knex.Transaction, hostname: string): Promise<void> {
  await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`domain:${hostname}`]);
}

/** Deletes one claim with an activity event in its team (by the system). */
async function removeClaim(trx: Knex.Transaction, d: DomainRow, type: string, summary: string): Promise<void> {
  await trx('domains').where({ id: d.id }).delete();
  await recordActivity(trx, {
    teamId: d.team_id,
    actor: null,
    kind: 'configuration',
    type,
    projectId: d.project_id,
    environmentId: d.environment_id,
    summary,
  });
}

const expiredSummary = (hostname: string) =>
  `removed ${hostname}: it was not verified within ${PENDING_CLAIM_DAYS} days of being added`;

/**
 * Deletes pending claims added more than 7 days before `asOf` (of one hostname, or all), each with an
 * activity event; answers how many.
 */
export async function expirePendingDomains(knex: Knex, opts: { asOf?: Date; hostname?: string } = {}): Promise<number> {
  const cutoff = new Date((opts.asOf ?? new Date()).getTime() - PENDING_CLAIM_DAYS * DAY_MS);
  const candidates = (await knex('domains')
    .where({ status: 'pending' })
    .andWhere('created_at', '<=', cutoff)
    .modify((q) => (opts.hostname ? q.where({ hostname: opts.hostname }) : q))
    .select('id', 'hostname')) as Array<{ id: string; hostname: string }>;
  let removed = 0;
  for (const c of candidates) {
    const done = await knex.transaction(async (trx) => {
      await lockHostname(trx, c.hostname);
      const d = (await trx('domains')
        .where({ id: c.id, status: 'pending' })
        .andWhere('created_at', '<=', cutoff)
        .first()) as DomainRow | undefined;
      if (!d) return false;
      await removeClaim(trx, d, 'domain_expired', expiredSummary(d.hostname));
      return true;
    });
    if (done) removed++;
  }
  return removed;
}

/** What a check needs: the database, Temporal with its queue and the mailer for the domain.verified announcement. */
type CheckDeps = Parameters<typeof emitDomainVerified>[0] & {
  config: { dnsServers?: string[]; baseUrl: string };
  mailer: Mailer;
  logger: Logger;
};

/**
 * Makes a pending claim verified, unless another claim of the hostname was verified first (then this one
 * is deleted, and the answer is 'gone'); the other pending claims of the hostname are deleted. domain.verified is
 * announced in the same transaction, before it commits: when that fails (Temporal away), the domain stays pending,
 * so that the next check verifies and announces it again. Its e-mail goes once it has committed.
 */
async function claimVerified(deps: CheckDeps, domainId: string): Promise<CheckOutcome> {
  type Claimed = { outcome: CheckOutcome; verified: Awaited<ReturnType<typeof emitDomainVerified>> };
  const gone: Claimed = { outcome: { status: 'gone' }, verified: null };
  const { outcome, verified: v } = await deps.knex.transaction(async (trx): Promise<Claimed> => {
    const first = (await trx('domains').where({ id: domainId }).first('hostname')) as { hostname: string } | undefined;
    if (!first) return gone;
    await lockHostname(trx, first.hostname);
    const d = (await trx('domains').where({ id: domainId }).first()) as DomainRow | undefined;
    if (!d) return gone;
    if (d.status === 'verified') return { outcome: { status: 'verified', changed: false }, verified: null };
    const winner = await trx('domains').where({ hostname: d.hostname, status: 'verified' }).first('id');
    if (winner) {
      await removeClaim(
        trx,
        d,
        'domain_claim_lost',
        `removed ${d.hostname}: another team verified it first, and a hostname is served by one environment`,
      );
      return gone;
    }
    await trx('domains').where({ id: d.id }).update({
      last_checked_at: trx.fn.now(),
      status: 'verified',
      verified_at: trx.fn.now(),
      updated_at: trx.fn.now(),
    });
    const others = (await trx('domains')
      .where({ hostname: d.hostname })
      .whereNot({ id: d.id })
      .select('*')) as DomainRow[];
    for (const o of others) {
      await removeClaim(
        trx,
        o,
        'domain_claim_lost',
        `removed ${o.hostname}: another team verified it first, and a hostname is served by one environment`,
      );
    }
    const verified = await emitDomainVerified({ ...deps, knex: trx }, d.id);
    return { outcome: { status: 'verified', changed: true }, verified };
  });
  if (v) {
    const where = [v.project_name, v.environment_name].filter(Boolean).join(' / ');
    // not awaited: the check's answer does not wait on a mail server (mailPeople logs what it cannot send)
    void mailProjectEvent(
      deps,
      { teamId: v.team_id, email: v.email, event: 'domain.verified' },
      {
        subject: `${v.hostname} is verified`,
        what: `${v.hostname} is verified${where ? ` for ${where}` : ''}`,
        detail:
          "The edge serves it on the environment from now on: point the domain's A or CNAME record at the edge " +
          'if it does not already. Where the console has automatic HTTPS, its certificate is on its way.',
        button: {
          label: 'See its domains',
          url: v.environment_id
            ? `${deps.config.baseUrl}/environments/${v.environment_id}/domains`
            : deps.config.baseUrl,
        },
      },
    );
  }
  return outcome;
}

export async function checkDomain(deps: CheckDeps, domainId: string): Promise<CheckOutcome> {
  const { knex } = deps;
  const domain = (await knex('domains').where({ id: domainId }).first()) as DomainRow | undefined;
  if (!domain) return { status: 'gone' };
  if (domain.status === 'verified') return { status: 'verified', changed: false };
  if (domain.created_at.getTime() <= Date.now() - PENDING_CLAIM_DAYS * DAY_MS) {
    await expirePendingDomains(knex, { hostname: domain.hostname });
    if (!(await knex('domains').where({ id: domainId }).first('id'))) return { status: 'gone' };
  }
  const answer = await lookupTxt(deps.config.dnsServers, `${VERIFY_PREFIX}${domain.hostname}`);
  const verified = answer.ok && answer.values.includes(domain.verification_value);
  if (verified) return claimVerified(deps, domainId);
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
