import { z } from 'zod';
import { ADDRESS_FIELDS } from './address-format';
import { idParams } from '../lib/params';

export { idParams };

export const orderParams = z.object({
  id: z.uuid(),
  order: z.string().regex(/^ord_[a-z0-9]{1,40}$/, 'is not an order id'),
});

const country = z
  .string()
  .trim()
  .transform((s) => s.toUpperCase())
  .pipe(z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code'));
const line = (max: number) => z.string().trim().max(max, `must be at most ${max} characters`);

export const addressFormatBody = z.strictObject({ country });

/** Billing details: the address fields are those address-format names; which are required depends on the country. */
export const billingBody = z.strictObject({
  name: line(200).min(1, 'must not be empty'),
  email: z.string().trim().max(254).pipe(z.email('must be an e-mail address')),
  country,
  vat_id: line(40)
    .regex(/^[A-Za-z0-9 .-]*$/, 'may hold letters, digits, spaces, dots and dashes')
    .optional(),
  ...Object.fromEntries(ADDRESS_FIELDS.map((f) => [f, line(200).optional()])),
}) as z.ZodType<BillingBody>;
export type BillingBody = { name: string; email: string; country: string; vat_id?: string } & Partial<
  Record<(typeof ADDRESS_FIELDS)[number], string>
>;

export const cancelBody = z.strictObject({
  confirm: z.literal(true, { error: 'must be true to cancel: read what ends first (GET), then confirm' }),
});

// ---- responses -------------------------------------------------------------------------------

export const addressFormatSchema = z.strictObject({
  country: z.string(),
  country_name: z.string(),
  fields: z.array(
    z.strictObject({
      name: z.string(),
      label: z.string(),
      required: z.boolean(),
      choices: z.array(z.string()).optional().describe('The accepted values (regions by their key)'),
      examples: z.array(z.string()).optional(),
    }),
  ),
  lines: z.array(z.array(z.string())).describe('The address as the country writes it: field names, line by line'),
});

export const subscriptionSchema = z.strictObject({
  order: z.string(),
  item: z.string(),
  kind: z.string(),
  project_id: z.uuid().nullable(),
  environment_id: z.uuid().nullable(),
  monthly_price: z.number(),
  status: z.enum(['active', 'cancelling', 'ended']),
  started_at: z.string(),
  ends_at: z.string().nullable().describe('When a cancelled subscription ends (or ended); null while it runs on'),
});

export const billingSchema = z.strictObject({
  details: z
    .strictObject({ name: z.string(), email: z.string(), country: z.string(), vat_id: z.string().nullable() })
    .catchall(z.string().nullable())
    .nullable(),
  currency: z.string(),
  monthly_total: z.number().describe('What the running subscriptions cost a month'),
  subscriptions: z.array(subscriptionSchema),
});

export const cancelPreviewSchema = z.strictObject({
  order: z.string(),
  item: z.string(),
  status: z.enum(['active', 'cancelling', 'ended']),
  monthly_price: z.number(),
  ends_at: z.string().describe('The end of the current period: the thing runs until then'),
  ends: z.string().describe('What ends, in a sentence, and how to confirm'),
});
