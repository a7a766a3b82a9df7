import type { Deps } from '../../system/deps';
import { Subscription } from '../../db/models/subscription';
import { currentPeriodEnd } from '../../db/queries/subscriptions';
import { startSubscriptionEnd } from '../../core/temporal-starts';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { recordActivity } from '../../db/queries/activity';
import { money } from './money';

async function load(deps: Deps, teamId: string, order: string) {
  const sub = await Subscription.query(deps.knex).findOne({ team_id: teamId, order });
  if (!sub) throw errors.notFound('subscription');
  return sub;
}

const WHAT_ENDS: Record<string, string> = {
  server: 'the server stops and its plan is given back',
  service: 'the service stops and is removed',
  storage: 'the storage beyond the allowance is given back',
  volume: 'the volume size beyond the allowance is given back',
};

/** A moment as a person reads it in a message: "2026-12-29 05:44 UTC". */
const moment = (d: Date) => `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;

function endsSentence(sub: Subscription, endsAt: Date): string {
  const what = WHAT_ENDS[sub.kind] ?? 'it is given back';
  if (sub.status === 'ended') return `${sub.item} ended on ${moment(endsAt)}.`;
  if (sub.status === 'cancelling') return `${sub.item} is cancelled and runs until ${moment(endsAt)}; then ${what}.`;
  return (
    `${sub.item} runs until the end of its period, ${moment(endsAt)}; then ${what} and it is no longer billed. ` +
    'Send {"confirm": true} to cancel.'
  );
}

/** What cancelling a subscription ends, and when (the end of its current monthly period). */
export async function previewCancel(deps: Deps, teamId: string, order: string) {
  const sub = await load(deps, teamId, order);
  const endsAt = sub.ended_at ?? sub.cancel_at ?? currentPeriodEnd(sub.started_at);
  return {
    order: sub.order,
    item: sub.item,
    status: sub.status,
    monthly_price: money(sub.monthly_price),
    ends_at: endsAt.toISOString(),
    ends: endsSentence(sub, endsAt),
  };
}

/**
 * Cancels at the end of the current period. The end is a Temporal timer: a workflow sleeping until
 * `cancel_at` (workflows/subscriptions.ts), started in the transaction that marks the subscription,
 * so neither exists without the other. 409 subscription_not_active when already cancelled or ended.
 */
export async function cancelSubscription(deps: Deps, actor: Actor, teamId: string, order: string) {
  await load(deps, teamId, order);
  const sub = await deps.knex.transaction(async (trx) => {
    const locked = await Subscription.query(trx).findOne({ team_id: teamId, order }).forUpdate();
    if (!locked) throw errors.notFound('subscription');
    if (locked.status !== 'active') {
      throw appError(
        'subscription_not_active',
        `This subscription is already ${locked.status === 'ended' ? 'ended' : 'cancelled'}`,
      );
    }
    const cancelAt = currentPeriodEnd(locked.started_at);
    const updated = await Subscription.query(trx).patchAndFetchById(locked.id, {
      status: 'cancelling',
      cancel_at: cancelAt,
      cancelled_by: actor.user.id,
    });
    await recordActivity(trx, {
      teamId,
      actor,
      kind: 'configuration',
      type: 'subscription_cancelled',
      projectId: locked.project_id,
      environmentId: locked.environment_id,
      summary: `Cancelled ${locked.item} (${order}); it ends ${moment(cancelAt)}`,
    });
    await startSubscriptionEnd(deps, { order, item: locked.item, endsAt: cancelAt.toISOString() });
    return updated;
  });
  return sub;
}
