/** A monthly price in the team's currency, e.g. "€12.50 a month"; null prices are "no price". */
export function formatMonthly(amount: number | null, currency: string): string {
  if (amount === null) return 'no price';
  return `${new Intl.NumberFormat('en', { style: 'currency', currency }).format(amount)} a month`;
}

/** The change a choice makes to the monthly bill: "+€5.00 a month", "−€5.00 a month" or "no change". */
export function formatDelta(delta: number, currency: string): string {
  if (Math.abs(delta) < 0.005) return 'no change to the bill';
  const abs = new Intl.NumberFormat('en', { style: 'currency', currency }).format(Math.abs(delta));
  return `${delta > 0 ? '+' : '−'}${abs} a month`;
}
