import { z } from 'zod';
import { normalizeCidr } from '../lib/cidr';

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
        username: z.string().min(1, 'must not be empty').max(64, 'must be at most 64 characters').refine((u) => !u.includes(':'), 'must not contain ":"'),
        password: z.string().min(8, 'must be at least 8 characters').max(256, 'must be at most 256 characters'),
      })
      .nullable()
      .optional(),
    stickiness: z.boolean().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give allowed_addresses, password or stickiness', path: ['body'] });

export const environmentEdgeSchema = z.object({
  allowed_addresses: z.array(z.string()),
  password: z.object({ enabled: z.boolean(), username: z.string().nullable() }),
  stickiness: z.boolean(),
});
