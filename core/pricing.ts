/**
 * The price list (CONTRACT "Machines"): shipped as system/price-list.json, replaced by the JSON file that
 * PRICE_LIST names. Every preview and every GET of a change prices itself here, so one file decides what
 * everything costs. Checked when read: a malformed price list stops the process that reads it.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defaultMaxProcesses } from '../db/queries/machines';

const SHIPPED = join(dirname(dirname(fileURLToPath(import.meta.url))), 'system', 'price-list.json');

const money = z.number().nonnegative();
const planSchema = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/),
  cpu: z.number().positive(),
  memory_mb: z.number().int().positive(),
  disk_gb: z.number().int().nonnegative(),
  monthly_price: money,
  /** pids.max of each of the plan's process trees (processes and threads); default: defaultMaxProcesses. */
  max_processes: z
    .number()
    .int()
    .min(64)
    .max(1 << 22)
    .optional(),
});
const buildPlanSchema = planSchema.omit({ disk_gb: true });

const priceListSchema = z.object({
  currency: z.string().regex(/^[A-Z]{3}$/),
  plans: z.array(planSchema).min(1),
  default_plan: z.string(),
  storage: z.object({ monthly_price_per_gb: money }),
  backups: z.object({ monthly_price_per_gb: money }),
  build_machines: z.record(z.string(), z.array(buildPlanSchema).min(1)),
});

export type PriceList = z.infer<typeof priceListSchema>;
export type Plan = z.infer<typeof planSchema>;

const cache = new Map<string, PriceList>();

export function loadPriceList(config: { priceList?: string }): PriceList {
  const file = config.priceList ?? SHIPPED;
  let list = cache.get(file);
  if (!list) {
    const parsed = priceListSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) throw new Error(`the price list ${file} is not valid: ${parsed.error.message}`);
    list = parsed.data;
    if (!list.plans.some((p) => p.id === list!.default_plan))
      throw new Error(`the price list's default_plan is not one of its plans`);
    cache.set(file, list);
  }
  return list;
}

export function planById(list: PriceList, id: string): Plan | undefined {
  return list.plans.find((p) => p.id === id);
}

/**
 * How many processes (and threads) one process tree of a plan (server or build machine) may have at once:
 * the plan's `max_processes`, or the default for its memory when the plan is not on the list (any more).
 */
export function maxProcessesOf(list: PriceList, size: { plan?: string; memoryMb: number }): number {
  const plans = [...list.plans, ...Object.values(list.build_machines).flat()];
  const plan = size.plan ? plans.find((p) => p.id === size.plan) : undefined;
  return plan?.max_processes ?? defaultMaxProcesses(size.memoryMb);
}

/** Rounded to cents: what a change adds to (or takes from) the monthly bill. */
export function monthlyPriceDelta(from: number, to: number): number {
  return Math.round((to - from) * 100) / 100;
}

/** The monthly price of `gb` gigabytes of storage (or of backups). */
export function storagePrice(list: PriceList, gb: number, what: 'storage' | 'backups' = 'storage'): number {
  return Math.round(gb * list[what].monthly_price_per_gb * 100) / 100;
}

/** A server's monthly price on `plan` with `instances` instances (null when the plan is off the list). */
export function serverMonthlyPrice(list: PriceList, plan: string, instances: number): number | null {
  const price = planById(list, plan)?.monthly_price;
  return price === undefined ? null : Math.round(price * instances * 100) / 100;
}
