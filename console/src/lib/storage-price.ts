/**
 * The price preview of a new storage allowance. Storage beyond what the web server's plan includes costs a
 * price per GB a month (price list `storage.monthly_price_per_gb`), rounded to the cent; the API states it
 * through two answers: GET .../storage/allowance (`monthly_price` of `allowance_gb - included_gb`) and GET
 * /volumes/{id}/grow (what each larger size adds, the allowance growing with the volume). The price per GB
 * is read from whichever has storage beyond the plan (the largest grow choice first: the least rounding).
 */
export interface AllowanceFacts {
  allowance_gb: number;
  included_gb: number;
  monthly_price: number;
}

export interface GrowFacts {
  size_gb: number;
  choices: { size_gb: number; monthly_price_delta: number }[];
}

/** Rounded to the cent (never -0). */
const cents = (n: number) => Math.round(n * 100) / 100 || 0;

/** The monthly price of one GB beyond the plan, or null when neither answer has storage beyond it. */
export function pricePerGb(a: AllowanceFacts, grow?: GrowFacts): number | null {
  const beyondNow = Math.max(0, a.allowance_gb - a.included_gb);
  const nowPrice = beyondNow > 0 ? a.monthly_price : 0;
  for (const c of [...(grow?.choices ?? [])].sort((x, y) => y.size_gb - x.size_gb)) {
    const beyond = a.allowance_gb + (c.size_gb - (grow?.size_gb ?? 0)) - a.included_gb;
    if (beyond > 0) return (nowPrice + c.monthly_price_delta) / beyond;
  }
  return beyondNow > 0 ? a.monthly_price / beyondNow : null;
}

/** What an allowance of `gb` will cost a month, and the change to the bill; null when it cannot be told. */
export function allowancePreview(
  a: AllowanceFacts,
  grow: GrowFacts | undefined,
  gb: number,
): { monthly: number; delta: number } | null {
  if (gb <= a.included_gb) return { monthly: 0, delta: cents(-a.monthly_price) };
  const perGb = pricePerGb(a, grow);
  if (perGb === null) return null;
  const monthly = cents((gb - a.included_gb) * perGb);
  return { monthly, delta: cents(monthly - a.monthly_price) };
}

/** Bytes as GB for reading ("0.03 GB", "12.5 GB"). */
export const gbOf = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(bytes < 1024 ** 3 ? 2 : 1)} GB`;
