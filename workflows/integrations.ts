// One delivery of one event to one integration: attempts with exponential backoff (1 s doubling up
// to an hour, about a day in all), so a receiver that is down for a while gets the event once back.

import { proxyActivities } from '@temporalio/workflow';
import type { IntegrationActivities } from '../activities/integrations/activities';

const { sendIntegrationDelivery } = proxyActivities<IntegrationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 hour', maximumAttempts: 36 },
});
const { failIntegrationDelivery } = proxyActivities<IntegrationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export interface DeliverIntegrationEventInput {
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
