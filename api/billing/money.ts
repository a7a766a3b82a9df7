/** Money is kept as numeric(12,2) strings; answers carry numbers with at most two decimals. */
export const money = (s: string | number) => Math.round(Number(s) * 100) / 100;
