// The end of a cancelled subscription: a durable timer until the end of its period, then one
// activity that ends it. Started by POST /teams/{id}/subscriptions/{order}/cancel.

import { proxyActivities, sleep } from '@temporalio/workflow';
import type { BillingActivities } from '../activities/billing';
import { profiles } from './profiles';

const { closeSubscription } = proxyActivities<BillingActivities>(profiles.untilDone);

interface EndSubscriptionWorkflowInput {
  order: string;
  /** ISO 8601: the end of the period the subscription was cancelled in. */
  endsAt: string;
}

export async function endSubscription(input: EndSubscriptionWorkflowInput): Promise<'ended' | 'not_due'> {
  const wait = new Date(input.endsAt).getTime() - Date.now();
  if (wait > 0) await sleep(wait);
  return closeSubscription({ order: input.order });
}
