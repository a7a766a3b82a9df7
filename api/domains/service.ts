/**
 * Custom domains (CONTRACT "Domains"). Adding locks the project's row so that the allowance counts every
 * domain of the project, pending ones included, without a race. A verified hostname is on one environment;
 * pending claims of it by different teams stand side by side until one verifies (core/domains.ts).
 * Verification: POST /domains/{id}/verify looks the TXT record up now (12 calls an hour per team and
 * hostname, kept when the domain is deleted), and a background workflow re-checks a pending domain with
 * backoff until it expires, a week after it was added.
 */
import type { Knex } from 'knex';
import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { Domain } from '../../db/models/domain';
import { checkDomain, expirePendingDomains, lockHostname } from '../../core/domains';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { authorize, type Action } from '../lib/policy';
import { randomToken } from '../lib/token-format';
import { findEnvironment } from '../environments/service';
import { startDomainRecheck, stopDomainRecheck } from '../../core/temporal-starts';
import { certificateSummaries, type CertificateSummary } from '../../db/queries/certificates';
import { requestFirstCertificate } from '../../core/certificate-tasks';
import { recordActivity } from '../../db/queries/activity';
import { environmentProject } from '../../db/queries/environments';
import { deleteDomainRow, hostnameVerified, projectDomainCount, teamClaimsHostname } from '../../db/queries/domains';
import { untilEdgesServe } from '../../core/edge-wait';

export const VERIFY_CALLS_PER_HOUR = 12;
const WEEK_MS = 7 * 86_400_000;

const taken = () => errors.conflict('domain_taken');
const claimedByTeam = () =>
  errors.conflict('domain_taken', 'Your team has already added that hostname to an environment; move it with PATCH');
const lost = () =>
  errors.conflict(
    'domain_taken',
    'Another team verified that hostname first; a hostname is served by one environment, so this claim was removed',
  );

/** Verify calls left this hour for each hostname of a team (CONTRACT: 12 an hour per team and hostname). */
async function checksLeft(knex: Knex, teamId: string, hostnames: string[]): Promise<Map<string, number>> {
  const rows = (await knex('domain_verify_calls')
    .where({ team_id: teamId })
    .whereIn('hostname', hostnames)
    .andWhere('at', '>', knex.raw("now() - interval '1 hour'"))
    .groupBy('hostname')
    .select('hostname', knex.raw('count(*)::int as n'))) as Array<{ hostname: string; n: number }>;
  const used = new Map(rows.map((r) => [r.hostname, r.n]));
  return new Map(hostnames.map((h) => [h, Math.max(0, VERIFY_CALLS_PER_HOUR - (used.get(h) ?? 0))]));
}

/** Loads a domain the caller may act on; another team's domain answers 404. */
export async function findDomain(deps: Deps, actor: Actor, id: string, action: Action): Promise<Domain> {
  const domain = await Domain.query(deps.knex).findById(id);
  if (!domain) throw errors.notFound('domain');
  await authorize(deps.knex, actor, domain.team_id, action, 'domain');
  return domain;
}

async function allowance(deps: Deps, projectId: string, knex = deps.knex) {
  const project = await knex('projects').where({ id: projectId }).first('domain_allowance');
  return {
    used: await projectDomainCount(knex, projectId),
    limit: (project?.domain_allowance as number | null) ?? deps.config.domainAllowance,
  };
}

/** A domain with what its answer shows beside it (the service reads them). */
export interface DomainRecord {
  domain: Domain;
  checksLeft: number;
  cert: CertificateSummary | undefined;
  httpsConfigured: boolean;
}

export async function listDomains(deps: Deps, actor: Actor, environmentId: string) {
  const env = await findEnvironment(deps, actor, environmentId, 'environment:read');
  const rows = await Domain.query(deps.knex).where({ environment_id: env.id }).orderBy('hostname');
  const [left, certs] = await Promise.all([
    checksLeft(
      deps.knex,
      env.team_id,
      rows.map((d) => d.hostname),
    ),
    certificateSummaries(
      deps.knex,
      rows.map((r) => r.id),
    ),
  ]);
  const https = Boolean(deps.config.acme.directoryUrl);
  return {
    domains: rows.map(
      (domain): DomainRecord => ({
        domain,
        checksLeft: left.get(domain.hostname) ?? 0,
        cert: certs.get(domain.id),
        httpsConfigured: https,
      }),
    ),
    allowance: await allowance(deps, env.project_id),
  };
}

/** One domain with its verify checks left and its certificate. */
async function withChecks(deps: Deps, d: Domain): Promise<DomainRecord> {
  const [left, certs] = await Promise.all([
    checksLeft(deps.knex, d.team_id, [d.hostname]),
    certificateSummaries(deps.knex, [d.id]),
  ]);
  return {
    domain: d,
    checksLeft: left.get(d.hostname) ?? 0,
    cert: certs.get(d.id),
    httpsConfigured: Boolean(deps.config.acme.directoryUrl),
  };
}

export async function addDomain(deps: Deps, actor: Actor, environmentId: string, input: { hostname: string }) {
  const env = await findEnvironment(deps, actor, environmentId, 'config:write');
  // A claim of this hostname that has outlived its week makes way first.
  await expirePendingDomains(deps.knex, { hostname: input.hostname });
  const domain = await deps.knex
    .transaction(async (trx) => {
      await trx('projects').where({ id: env.project_id }).forUpdate().first('id');
      await lockHostname(trx, input.hostname);
      if (await hostnameVerified(trx, input.hostname)) throw taken();
      if (await teamClaimsHostname(trx, input.hostname, env.team_id)) {
        throw claimedByTeam();
      }
      const { used, limit } = await allowance(deps, env.project_id, trx);
      if (used >= limit) {
        throw errors.conflict(
          'domain_allowance_spent',
          `The project has used its allowance of ${limit} domains; remove one, or raise the project's allowance`,
          {
            allowance: { used, limit },
          },
        );
      }
      await recordActivity(trx, {
        teamId: env.team_id,
        actor,
        kind: 'configuration',
        type: 'domain_added',
        projectId: env.project_id,
        environmentId: env.id,
        summary: `added ${input.hostname} to ${env.name}`,
      });
      const added = await Domain.query(trx).insertAndFetch({
        team_id: env.team_id,
        project_id: env.project_id,
        environment_id: env.id,
        hostname: input.hostname,
        verification_value: `vc-verify=${randomToken(18)}`,
        status: 'pending',
      } as Partial<Domain>);
      // The commit waits for the re-check's start: a domain is never left pending with nothing to check it.
      await startRecheck(deps, added);
      return added;
    })
    .catch((err) => {
      throw err instanceof UniqueViolationError ? taken() : err;
    });
  return withChecks(deps, domain);
}

/**
 * The background re-check, started before the domain's row commits. Refused (Temporal cannot be reached), the
 * domain is not added and the answer is 503; a re-check whose row then fails to commit finds the domain gone at
 * its first look and ends.
 */
async function startRecheck(deps: Deps, domain: Domain): Promise<void> {
  try {
    await startDomainRecheck(deps, {
      domainId: domain.id,
      firstWaitSeconds: deps.config.domainRecheckSeconds,
      giveUpAt: new Date(domain.created_at.getTime() + WEEK_MS).toISOString(),
    });
  } catch (err) {
    deps.logger.warn({ err, domainId: domain.id }, 'could not start the background re-check of a domain');
    throw appError(
      'unavailable',
      'The background DNS check of the domain could not be scheduled, so the domain was not added; try again shortly',
    );
  }
}

/**
 * Looks the TXT record up now. The 13th call within an hour for the same hostname by the same team is
 * refused with 429 and Retry-After (when the oldest call of the hour leaves it), recording nothing. A claim
 * that lost to another team's verification is removed and answered 409 domain_taken.
 */
export async function verifyDomain(deps: Deps, actor: Actor, id: string) {
  const found = await findDomain(deps, actor, id, 'config:write');
  await deps.knex.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`domain-checks:${found.team_id}:${found.hostname}`]);
    const calls = await trx('domain_verify_calls')
      .where({ team_id: found.team_id, hostname: found.hostname })
      .andWhere('at', '>', trx.raw("now() - interval '1 hour'"))
      .orderBy('at')
      .select(trx.raw("extract(epoch from (at + interval '1 hour' - now())) as left"));
    if (calls.length >= VERIFY_CALLS_PER_HOUR) {
      throw errors.rateLimited(
        Number(calls[0].left),
        `At most ${VERIFY_CALLS_PER_HOUR} checks an hour of one hostname by a team; try again later`,
      );
    }
    await trx('domain_verify_calls').insert({ domain_id: id, team_id: found.team_id, hostname: found.hostname });
  });
  // domain.verified is announced as the domain is verified: when that cannot be done (Temporal away: 503), the
  // domain stays pending, and the next check (this call again, or the background re-check) announces it
  const outcome = await checkDomain(deps, id);
  if (outcome.status === 'verified' && outcome.changed) await requestFirstCertificate(deps, id);
  // a domain verified now is served by every edge when this answers (503 edge_unavailable after 10 s)
  if (outcome.status === 'verified' && outcome.changed) await untilEdgesServe(deps.knex);
  const domain = await Domain.query(deps.knex).findById(id);
  if (!domain) {
    if (outcome.status === 'gone' && found.created_at.getTime() > Date.now() - WEEK_MS) throw lost();
    throw errors.notFound('domain');
  }
  return withChecks(deps, domain);
}

/** Moves a domain to another environment of the same project. */
export async function moveDomain(deps: Deps, actor: Actor, id: string, input: { environment_id: string }) {
  const domain = await findDomain(deps, actor, id, 'config:write');
  const target = await environmentProject(deps.knex, input.environment_id);
  if (!target || target.project_id !== domain.project_id) {
    throw errors.invalid({ environment_id: 'must be an environment of the same project' });
  }
  const moved = await deps.knex.transaction(async (trx) => {
    await recordActivity(trx, {
      teamId: domain.team_id,
      actor,
      kind: 'configuration',
      type: 'domain_moved',
      projectId: domain.project_id,
      environmentId: target.id,
      summary: `moved ${domain.hostname} to another environment`,
    });
    return Domain.query(trx).patchAndFetchById(id, {
      environment_id: target.id,
      updated_at: new Date(),
    } as Partial<Domain>);
  });
  if (!moved) throw errors.notFound('domain');
  // a served domain is served by its new environment (its certificate along) on every live edge when this answers
  if (domain.status === 'verified') await untilEdgesServe(deps.knex);
  return withChecks(deps, moved);
}

export async function deleteDomain(deps: Deps, actor: Actor, id: string): Promise<void> {
  const domain = await findDomain(deps, actor, id, 'config:write');
  await deps.knex.transaction(async (trx) => {
    await deleteDomainRow(trx, id);
    await recordActivity(trx, {
      teamId: domain.team_id,
      actor,
      kind: 'configuration',
      type: 'domain_deleted',
      projectId: domain.project_id,
      environmentId: domain.environment_id,
      summary: `removed ${domain.hostname}`,
    });
  });
  // The re-check would find it gone by itself; stopping it now keeps the Web UI tidy.
  await stopDomainRecheck(deps, id);
  // no live edge serves a deleted domain (nor its certificate) any more when this answers
  if (domain.status === 'verified') await untilEdgesServe(deps.knex);
}
