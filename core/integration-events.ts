/**
 * Events for integrations (CONTRACT: task.succeeded, task.failed, domain.verified, backup.failed,
 * token.expiring). Emitting writes one delivery per integration of the team that listens for the
 * event and starts one workflow per delivery (workflows/integrations.ts), which sends it with backoff.
 * Used by the API and by activities alike (both reach it through this module).
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Client } from '@temporalio/client';
import { Integration } from '../db/models/integration';
import { storedRule } from '../db/queries/notification-rules';
import { startIntegrationDelivery } from './temporal-starts';
import type { IntegrationEvent } from './integration-kinds';

interface EmittedEvent {
  teamId: string;
  event: IntegrationEvent;
  /** What happened, e.g. `{task: {...}, project: {...}, environment: {...}}`; never a secret. */
  data: Record<string, unknown>;
  /** A stable id makes emitting again (a retried activity) deliver nothing twice. */
  eventId?: string;
  occurredAt?: Date;
}

/** Integrations may narrow who hears of what (project notification rules): ids allowed, or all when undefined. */
export async function emitIntegrationEvent(
  deps: { knex: Knex; temporal: Client; config: { taskQueue: string } },
  e: EmittedEvent,
  only?: string[],
): Promise<string[]> {
  let q = Integration.query(deps.knex).where({ team_id: e.teamId }).whereRaw('? = ANY(events)', [e.event]);
  if (only) q = q.whereIn('id', only.length ? only : ['00000000-0000-0000-0000-000000000000']);
  const integrations = await q;
  const eventId = e.eventId ?? `evt_${randomBytes(12).toString('hex')}`;
  const payload = {
    id: eventId,
    event: e.event,
    occurred_at: (e.occurredAt ?? new Date()).toISOString(),
    team_id: e.teamId,
    data: e.data,
  };
  const started: string[] = [];
  for (const integration of integrations) {
    await deps.knex.transaction(async (trx) => {
      const [row] = await trx('integration_deliveries')
        .insert({ integration_id: integration.id, event_id: eventId, event: e.event, payload: JSON.stringify(payload) })
        .onConflict(['integration_id', 'event_id'])
        .ignore()
        .returning('id');
      if (!row) return; // emitted before: its workflow runs already
      await startIntegrationDelivery(
        deps,
        row.id,
        `${e.event} to integration "${integration.name}" (${integration.kind})`,
      );
      started.push(row.id);
    });
  }
  return started;
}

/**
 * domain.verified for a domain that has just become verified (POST /domains/{id}/verify or the background
 * re-check), to the integrations its project's rule names (all of the team's listening ones without a
 * rule). The event id is the domain's: announced twice, it is delivered once. Answers what the e-mail of the
 * event needs (sent once the verification has committed: core/domains.ts).
 */
export async function emitDomainVerified(
  deps: { knex: Knex; temporal: Client; config: { taskQueue: string } },
  domainId: string,
): Promise<VerifiedDomain | null> {
  const domain = (await deps
    .knex('domains as d')
    .leftJoin('projects as p', 'p.id', 'd.project_id')
    .leftJoin('environments as e', 'e.id', 'd.environment_id')
    .where('d.id', domainId)
    .first(
      'd.id',
      'd.team_id',
      'd.hostname',
      'd.verified_at',
      'd.project_id',
      'p.name as project_name',
      'd.environment_id',
      'e.name as environment_name',
    )) as Omit<VerifiedDomain, 'email'> | undefined;
  if (!domain) return null;
  const rule = domain.project_id ? await storedRule(deps.knex, domain.project_id, 'domain.verified') : undefined;
  await emitIntegrationEvent(
    deps,
    {
      teamId: domain.team_id,
      event: 'domain.verified',
      eventId: `evt_domain_verified_${domain.id}`,
      occurredAt: domain.verified_at ?? new Date(),
      data: {
        domain: { id: domain.id, hostname: domain.hostname },
        project: domain.project_id ? { id: domain.project_id, name: domain.project_name } : null,
        environment: domain.environment_id ? { id: domain.environment_id, name: domain.environment_name } : null,
      },
    },
    rule?.integration_ids,
  );
  return { ...domain, email: rule?.email ?? 'none' };
}

interface VerifiedDomain {
  id: string;
  team_id: string;
  hostname: string;
  verified_at: Date | null;
  project_id: string | null;
  project_name: string | null;
  environment_id: string | null;
  environment_name: string | null;
  /** Who the project's rule e-mails of it. */
  email: 'members' | 'admins' | 'none';
}
