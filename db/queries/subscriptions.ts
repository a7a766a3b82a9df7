/**
 * Subscriptions, shared by the areas that sell things (servers, services, storage) and by billing.
 * Every paid thing is opened here, in the transaction that creates it, so it always has an order.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Subscription } from '../models/subscription';

/** A readable order id: `ord_` and 12 base32 characters. */
function newOrderId(): string {
  const alphabet = 'abcdefghijkmnpqrstuvwxyz23456789';
  return `ord_${[...randomBytes(12)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

interface OpenSubscription {
  teamId: string;
  projectId?: string | null;
  environmentId?: string | null;
  kind: string;
  resourceId?: string | null;
  item: string;
  monthlyPrice: number;
  currency: string;
  startedAt?: Date;
}

export async function openSubscription(trx: Knex | Knex.Transaction, s: OpenSubscription): Promise<Subscription> {
  return Subscription.query(trx).insertAndFetch({
    order: newOrderId(),
    team_id: s.teamId,
    project_id: s.projectId ?? null,
    environment_id: s.environmentId ?? null,
    kind: s.kind,
    resource_id: s.resourceId ?? null,
    item: s.item,
    monthly_price: s.monthlyPrice.toFixed(2),
    currency: s.currency,
    status: 'active',
    ...(s.startedAt ? { started_at: s.startedAt } : {}),
  } as Partial<Subscription>);
}

/**
 * Ends at once the running subscriptions of one paid thing: it moved to another plan (a new subscription
 * replaces it) or never came to be (a service whose creation failed). Answers how many ended.
 */
export async function endSubscriptionsOf(
  trx: Knex | Knex.Transaction,
  kind: string,
  resourceId: string,
): Promise<number> {
  return trx('subscriptions')
    .where({ kind, resource_id: resourceId })
    .whereIn('status', ['active', 'cancelling'])
    .update({ status: 'ended', ended_at: trx.fn.now() });
}

/** What a thing's subscription line says: "Web server, plan small (production of shop)". */
export async function subscriptionItem(
  trx: Knex | Knex.Transaction,
  what: string,
  plan: string,
  environmentId: string | null,
): Promise<string> {
  const env = environmentId
    ? await trx('environments as e')
        .join('projects as p', 'p.id', 'e.project_id')
        .where('e.id', environmentId)
        .first('e.name as environment', 'p.name as project')
    : undefined;
  return `${what}, plan ${plan}${env ? ` (${env.environment} of ${env.project})` : ''}`;
}

/** `date` plus `months` calendar months (UTC), the day clamped to the month's last (Jan 31 + 1 = Feb 28/29). */
function addMonths(date: Date, months: number): Date {
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth() + months;
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const d = new Date(date);
  d.setUTCFullYear(y, m, Math.min(date.getUTCDate(), last));
  return d;
}

/** The end of the monthly period running at `now` for something started at `startedAt`. */
export function currentPeriodEnd(startedAt: Date, now = new Date()): Date {
  let months = Math.max(
    1,
    (now.getUTCFullYear() - startedAt.getUTCFullYear()) * 12 + now.getUTCMonth() - startedAt.getUTCMonth(),
  );
  while (months > 1 && addMonths(startedAt, months - 1) > now) months -= 1;
  while (addMonths(startedAt, months) <= now) months += 1;
  return addMonths(startedAt, months);
}
