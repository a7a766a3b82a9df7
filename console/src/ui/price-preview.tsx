import { formatDelta, formatMonthly } from '../lib/price';

/** What a machine change will cost, shown before the confirming click. */
export function PricePreview(props: { label: string; monthly: number | null; delta: number; currency: string }) {
  const change = formatDelta(props.delta, props.currency);
  return (
    <div class="price" role="status" aria-label="Price preview">
      <strong>{props.label}</strong>:{' '}
      {props.monthly === null ? change : `${formatMonthly(props.monthly, props.currency)} (${change})`}
    </div>
  );
}
