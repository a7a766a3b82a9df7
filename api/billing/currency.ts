import type { Deps } from '../../system/deps';
import { loadPriceList } from '../../core/pricing';

/** The currency bills are in: the price list's (system/price-list.json, or the file PRICE_LIST names). */
export function billingCurrency(deps: Deps): string {
  return loadPriceList(deps.config).currency;
}
