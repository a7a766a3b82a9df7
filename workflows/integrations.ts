// One delivery of one event to one integration: attempts with exponential backoff (1 s doubling up
// to an hour, about a day in all), so a receiver that is down for a while gets the event once back.

import { proxyActivities } from '@temporalio/workflow';
import type { IntegrationActivities } from '../activities/integrations';
import { profiles } from './profiles';

const { sendIntegrationDelivery } = proxyActivities<IntegrationActivities>(profiles.delivery);
const { failIntegrationDelivery } = proxyActivities<IntegrationActivities>(profiles.bookkeeping);

interface DeliverIntegrationEventInput {
  deliveryId: string;
}

export async function deliverIntegrationEvent(
  input: DeliverIntegrationEventInput,
): Promise<'delivered' | 'gone' | 'failed'> {
  try {
    return await sendIntegrationDelivery(input);
  } catch {
    await failIntegrationDelivery(input);
    return 'failed';
  }
}
