import type { Deps } from '../../system/deps';

/** The currency bills are in: the price list's (the platform's api/lib/pricing.ts once merged). */
export function billingCurrency(_deps: Deps): string {
  return 'EUR';
}
