import { randomBytes, randomUUID } from 'node:crypto';
import type { Deps } from '../../system/deps';
import { seal } from '../../system/crypto';
import { Integration } from '../../db/models/integration';
import { IntegrationDelivery } from '../../db/models/integration-delivery';
import { recordActivity } from '../../db/queries/activity';
import { sealWebhookUrls, webhookUrlColumns } from '../../db/queries/integrations';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { INTEGRATION_EVENTS, INTEGRATION_KINDS, KIND_NAMES, type IntegrationKind } from '../../core/integration-kinds';
import type { CreateBody, UpdateBody } from './schemas';
import { aad } from '../../db/aad';
import type { ModelObject } from 'objection';

export function newIntegrationChoices() {
  return {
    kinds: KIND_NAMES.map((kind) => ({ kind, name: INTEGRATION_KINDS[kind].name })),
    events: [...INTEGRATION_EVENTS],
  };
}

export function kindFields(kind: IntegrationKind) {
  return { fields: [...INTEGRATION_KINDS[kind].fields] };
}

/**
 * Creates an integration. A webhook gets a signing key made here, answered once as `secret`
 * (`whsec_<base64>`, Standard Webhooks) and kept sealed; a Slack URL is a secret too, kept sealed.
 */
export async function createIntegration(deps: Deps, actor: Actor, teamId: string, body: CreateBody) {
  const id = randomUUID();
  const secret = body.kind === 'webhook' ? `whsec_${randomBytes(32).toString('base64')}` : body.webhook_url;
  const row = await deps.knex.transaction(async (trx) => {
    const inserted = await Integration.query(trx).insertAndFetch({
      id,
      team_id: teamId,
      kind: body.kind,
      name: body.name,
      events: body.events,
      ...(body.kind === 'webhook' ? webhookUrlColumns(deps.secrets, id, body.url, {}) : { config: {} }),
      sealed_secret: seal(deps.secrets, secret, aad.integration(id)),
      created_by: actor.user.id,
    } as Partial<Integration>);
    await recordActivity(trx, {
      teamId,
      actor,
      kind: 'configuration',
      type: 'integration_added',
      summary: `Integration "${body.name}" (${body.kind}) added`,
    });
    return inserted;
  });
  return { integration: row, ...(body.kind === 'webhook' ? { secret } : {}) };
}

/** The team's integrations, oldest first (no deliveries: GET /integrations/{id} has them). */
export async function listIntegrations(deps: Deps, teamId: string) {
  const read = () => Integration.query(deps.knex).where({ team_id: teamId }).orderBy(['created_at', 'id']);
  let rows = await read();
  // A clear URL of an older row is sealed before it is shown (as GET /integrations/{id} does).
  if (
    (await sealWebhookUrls(
      deps.knex,
      deps.secrets,
      rows.map((r) => r.id),
    )) > 0
  )
    rows = await read();
  return rows.map((integration) => ({ integration }));
}

/** One integration with its last 20 deliveries, newest first. A clear URL of an older row is sealed now. */
export async function getIntegration(deps: Deps, id: string) {
  await sealWebhookUrls(deps.knex, deps.secrets, [id]);
  const row = await Integration.query(deps.knex).findById(id);
  if (!row) throw errors.notFound('integration');
  const deliveries = await IntegrationDelivery.query(deps.knex)
    .where({ integration_id: id })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(20);
  return { integration: row, deliveries };
}

export async function updateIntegration(deps: Deps, actor: Actor, row: ModelObject<Integration>, body: UpdateBody) {
  const fields: Record<string, string> = {};
  if (row.kind === 'webhook' && body.webhook_url !== undefined)
    fields.webhook_url = 'is not a field of a webhook integration';
  if (row.kind === 'slack' && body.url !== undefined) fields.url = 'is not a field of a slack integration';
  if (Object.keys(fields).length) throw errors.invalid(fields);
  const patch: Partial<Integration> = { updated_at: new Date() };
  if (body.name !== undefined) patch.name = body.name;
  if (body.events !== undefined) patch.events = body.events;
  if (body.url !== undefined) Object.assign(patch, webhookUrlColumns(deps.secrets, row.id, body.url, row.config));
  if (body.webhook_url !== undefined)
    patch.sealed_secret = seal(deps.secrets, body.webhook_url, aad.integration(row.id));
  await deps.knex.transaction(async (trx) => {
    await Integration.query(trx).patch(patch).where({ id: row.id });
    await recordActivity(trx, {
      teamId: row.team_id,
      actor,
      kind: 'configuration',
      type: 'integration_changed',
      summary: `Integration "${patch.name ?? row.name}" changed`,
    });
  });
  return getIntegration(deps, row.id);
}

export async function deleteIntegration(deps: Deps, actor: Actor, row: ModelObject<Integration>) {
  await deps.knex.transaction(async (trx) => {
    await Integration.query(trx).deleteById(row.id);
    await recordActivity(trx, {
      teamId: row.team_id,
      actor,
      kind: 'configuration',
      type: 'integration_removed',
      summary: `Integration "${row.name}" (${row.kind}) removed`,
    });
  });
}
