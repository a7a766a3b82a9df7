import { z } from 'zod';
import { normalizeCidr } from '../../core/cidr';
import {
  MAX_EDGE_PAGE,
  MAX_MAINTENANCE_NOTE,
  MAX_SERVED_PAGE_BYTES,
  maintenancePageBytes,
} from '../../core/edge-pages';

/** A CIDR (or a bare address), normalized; a fault is named by its index (`allowed_addresses.2`). */
export const cidr = z.string().transform((value, ctx) => {
  const n = normalizeCidr(value);
  if (!n) {
    ctx.addIssue({ code: 'custom', message: 'must be a CIDR such as 203.0.113.0/24 or 2001:db8::/32, or one address' });
    return z.NEVER;
  }
  return n;
});

export const environmentEdgeBody = z
  .strictObject({
    allowed_addresses: z.array(cidr).max(200, 'at most 200 entries').optional(),
    password: z
      .strictObject({
        username: z
          .string()
          .min(1, 'must not be empty')
          .max(64, 'must be at most 64 characters')
          .refine((u) => !u.includes(':'), 'must not contain ":"'),
        password: z.string().min(8, 'must be at least 8 characters').max(256, 'must be at most 256 characters'),
      })
      .nullable()
      .optional(),
    stickiness: z.boolean().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, {
    message: 'give allowed_addresses, password or stickiness',
    path: ['body'],
  });

export const environmentEdgeSchema = z.strictObject({
  allowed_addresses: z.array(z.string()),
  password: z.strictObject({ enabled: z.boolean(), username: z.string().nullable() }),
  stickiness: z.boolean(),
});

const pageText = z.string().max(MAX_EDGE_PAGE, `must be at most ${MAX_EDGE_PAGE} characters`);
/** What the edge can hold served (core/edge-pages.ts): a page past it would never be shown. */
const maintenancePage = pageText
  .refine((p) => maintenancePageBytes(p) <= MAX_SERVED_PAGE_BYTES, {
    message: `must take at most ${MAX_SERVED_PAGE_BYTES} bytes served, with the longest note (${MAX_MAINTENANCE_NOTE} characters, escaped) at each {{note}}: use fewer {{note}} or fewer multi-byte characters`,
  })
  .nullable();
const errorPage = pageText
  .refine((p) => Buffer.byteLength(p) <= MAX_SERVED_PAGE_BYTES, {
    message: `must be at most ${MAX_SERVED_PAGE_BYTES} bytes in UTF-8`,
  })
  .nullable();

/** One save: every part is checked (each fault named), and nothing is kept unless all pass. */
export const projectEdgeBody = z
  .strictObject({
    blocked_addresses: z.array(cidr).max(1000, 'at most 1000 entries').optional(),
    blocked_user_agents: z
      .array(z.string().trim().min(1, 'must not be empty').max(256, 'must be at most 256 characters'))
      .max(200, 'at most 200 entries')
      .optional(),
    rate_limit: z
      .strictObject({
        requests: z
          .number()
          .int('must be a whole number')
          .min(1, 'must be at least 1')
          .max(1_000_000, 'must be at most 1000000'),
        per_seconds: z
          .number()
          .int('must be a whole number')
          .min(1, 'must be at least 1')
          .max(86_400, 'must be at most 86400'),
      })
      .nullable()
      .optional(),
    hsts: z
      .strictObject({
        max_age: z
          .number()
          .int('must be a whole number')
          .min(0, 'must be 0 or more')
          .max(63_072_000, 'must be at most 63072000 (two years)'),
        include_subdomains: z.boolean().default(false),
        preload: z.boolean().default(false),
      })
      .nullable()
      .optional(),
    compression: z.boolean().optional(),
    pages: z.strictObject({ maintenance: maintenancePage.optional(), error: errorPage.optional() }).optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one part of the edge', path: ['body'] });

export const projectEdgeSchema = z.strictObject({
  blocked_addresses: z.array(z.string()),
  blocked_user_agents: z.array(z.string()),
  rate_limit: z.strictObject({ requests: z.number().int(), per_seconds: z.number().int() }).nullable(),
  hsts: z.strictObject({ max_age: z.number().int(), include_subdomains: z.boolean(), preload: z.boolean() }).nullable(),
  compression: z.boolean(),
  pages: z.strictObject({ maintenance: z.string().nullable(), error: z.string().nullable() }),
});
