import { randomBytes, randomUUID } from 'node:crypto';
import type { Deps } from '../../system/deps';
import { seal } from '../../system/crypto';
import { Integration } from '../../db/models/integration';
import { IntegrationDelivery } from '../../db/models/integration-delivery';
import type { Actor } from '../lib/actor';
import { errors } from '../lib/errors';
import { authorize } from '../lib/policy';
import { INTEGRATION_EVENTS, INTEGRATION_KINDS, integrationAad, KIND_NAMES, type IntegrationKind } from './kinds';
import { presentIntegration } from './presenter';
import type { CreateBody, UpdateBody } from './schemas';

export async function newIntegrationChoices(deps: Deps, actor: Actor, teamId: string) {
  await authorize(deps.knex, actor, teamId, 'integrations:manage', 'team');
  return { kinds: KIND_NAMES.map((kind) => ({ kind, name: INTEGRATION_KINDS[kind].name })), events: [...INTEGRATION_EVENTS] };
}

export async function kindFields(deps: Deps, actor: Actor, teamId: string, kind: IntegrationKind) {
  await authorize(deps.knex, actor, teamId, 'integrations:manage', 'team');
  return { fields: [...INTEGRATION_KINDS[kind].fields] };
}

/**
 * Creates an integration. A webhook gets a signing key made here, answered once as `secret`
 * (`whsec_<base64>`, Standard Webhooks) and kept sealed; a Slack URL is a secret too, kept sealed.
 */
export async function createIntegration(deps: Deps, actor: Actor, teamId: string, body: CreateBody) {
  await authorize(deps.knex, actor, teamId, 'integrations:manage', 'team');
  const id = randomUUID();
  const secret = body.kind === 'webhook' ? `whsec_${randomBytes(32).toString('base64')}` : body.webhook_url;
  const row = await Integration.query(deps.knex).insertAndFetch({
    id,
    team_id: teamId,
    kind: body.kind,
    name: body.name,
    events: body.events,
    config: body.kind === 'webhook' ? { url: body.url } : {},
    sealed_secret: seal(deps.secrets, secret, integrationAad(id)),
    created_by: actor.user.id,
  } as Partial<Integration>);
  return { ...presentIntegration(row), ...(body.kind === 'webhook' ? { secret } : {}) };
}

async function load(deps: Deps, actor: Actor, id: string) {
  const row = await Integration.query(deps.knex).findById(id);
  if (!row) throw errors.notFound('integration');
  await authorize(deps.knex, actor, row.team_id, 'integrations:manage', 'integration');
  return row;
}

/** One integration with its last 20 deliveries, newest first. */
export async function getIntegration(deps: Deps, actor: Actor, id: string) {
  const row = await load(deps, actor, id);
  const deliveries = await IntegrationDelivery.query(deps.knex)
    .where({ integration_id: id })
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    .limit(20);
  return presentIntegration(row, deliveries);
}

export async function updateIntegration(deps: Deps, actor: Actor, id: string, body: UpdateBody) {
  const row = await load(deps, actor, id);
  const fields: Record<string, string> = {};
  if (row.kind === 'webhook' && body.webhook_url !== undefined) fields.webhook_url = 'is not a field of a webhook integration';
  if (row.kind === 'slack' && body.url !== undefined) fields.url = 'is not a field of a slack integration';
  if (Object.keys(fields).length) throw errors.invalid(fields);
  const patch: Partial<Integration> = { updated_at: new Date() };
  if (body.name !== undefined) patch.name = body.name;
  if (body.events !== undefined) patch.events = body.events;
  if (body.url !== undefined) patch.config = { ...row.config, url: body.url };
  if (body.webhook_url !== undefined) patch.sealed_secret = seal(deps.secrets, body.webhook_url, integrationAad(id));
  await Integration.query(deps.knex).patch(patch).where({ id });
  return getIntegration(deps, actor, id);
}

export async function deleteIntegration(deps: Deps, actor: Actor, id: string) {
  await load(deps, actor, id);
  await Integration.query(deps.knex).deleteById(id);
}
