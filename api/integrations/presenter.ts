import type { Integration } from '../../db/models/integration';
import type { IntegrationDelivery } from '../../db/models/integration-delivery';
import { shownWebhookUrl } from '../../db/queries/integrations';

/**
 * Never a sealed secret: a webhook shows its URL without userinfo and with query values "redacted" (a token
 * in the query is a credential), a Slack integration nothing of its URL.
 */
export function presentIntegration({
  integration: i,
  deliveries,
  secret,
}: {
  integration: Integration;
  deliveries?: IntegrationDelivery[];
  /** Only at creation: the webhook's signing secret, shown once. */
  secret?: string;
}) {
  return {
    id: i.id,
    team_id: i.team_id,
    kind: i.kind,
    name: i.name,
    events: i.events,
    ...(i.kind === 'webhook' ? { url: shownWebhookUrl(i) } : {}),
    created_at: i.created_at.toISOString(),
    updated_at: i.updated_at.toISOString(),
    ...(deliveries ? { deliveries: deliveries.map(presentDelivery) } : {}),
    ...(secret ? { secret } : {}),
  };
}

function presentDelivery(d: IntegrationDelivery) {
  return {
    id: d.id,
    event: d.event,
    event_id: d.event_id,
    status: d.status,
    attempts: d.attempts,
    response_status: d.response_status,
    last_attempt_at: d.last_attempt_at?.toISOString() ?? null,
    created_at: d.created_at.toISOString(),
  };
}
