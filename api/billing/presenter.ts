import type { BillingDetails } from '../../db/models/billing-details';
import type { Subscription } from '../../db/models/subscription';
import { money } from './money';

export function presentSubscription(s: Subscription) {
  return {
    order: s.order,
    item: s.item,
    kind: s.kind,
    project_id: s.project_id,
    environment_id: s.environment_id,
    monthly_price: money(s.monthly_price),
    status: s.status,
    started_at: s.started_at.toISOString(),
    ends_at: (s.ended_at ?? s.cancel_at)?.toISOString() ?? null,
  };
}

function presentBillingDetails(d: BillingDetails | undefined) {
  if (!d) return null;
  return { name: d.name, email: d.email, country: d.country, vat_id: d.vat_id, ...d.address };
}

/** The team's billing details, what it pays for, and the monthly total of what still runs. */
export function presentBilling(b: {
  details: BillingDetails | undefined;
  currency: string;
  monthly_total: number;
  subscriptions: Subscription[];
}) {
  return {
    details: presentBillingDetails(b.details),
    currency: b.currency,
    monthly_total: money(b.monthly_total),
    subscriptions: b.subscriptions.map(presentSubscription),
  };
}
