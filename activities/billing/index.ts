import type { Deps } from '../../system/deps';
import { Subscription } from '../../db/models/subscription';

interface EndSubscriptionInput {
  order: string;
}

/**
 * Ends a cancelled subscription once its period is over: it is no longer billed, and what it paid
 * for is given back (the area that sold it reads `status = 'ended'`). Only a subscription still
 * `cancelling` with its end reached is ended, so a repeated or early call changes nothing.
 */
export function createBillingActivities(deps: Deps) {
  return {
    async closeSubscription(input: EndSubscriptionInput): Promise<'ended' | 'not_due'> {
      const n = await Subscription.query(deps.knex)
        .where({ order: input.order, status: 'cancelling' })
        .where('cancel_at', '<=', new Date())
        .patch({ status: 'ended', ended_at: deps.knex.raw('cancel_at') as unknown as Date });
      return n > 0 ? 'ended' : 'not_due';
    },
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
