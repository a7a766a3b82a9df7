import { formatDelta, formatMonthly } from '../lib/price';

/** What a machine change will cost, shown before the confirming click. */
export function PricePreview(props: { label: string; monthly: number | null; delta: number; currency: string }) {
  return (
    <div class="price" role="status" aria-label="Price preview">
      <strong>{props.label}</strong>: {formatMonthly(props.monthly, props.currency)} (
      {formatDelta(props.delta, props.currency)})
    </div>
  );
}
