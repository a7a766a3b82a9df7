import type { BillingDetails } from '../../db/models/billing-details';
import type { Subscription } from '../../db/models/subscription';

/** Money kept as numeric(12,2) strings; answers carry numbers with at most two decimals. */
export const money = (s: string | number) => Math.round(Number(s) * 100) / 100;

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

export function presentBillingDetails(d: BillingDetails | undefined) {
  if (!d) return null;
  return { name: d.name, email: d.email, country: d.country, vat_id: d.vat_id, ...d.address };
}
