import { z } from 'zod';
import { normalizeHostname } from './hostname';

export const idParams = z.object({ id: z.uuid() });

/** The hostname, normalized (lower-case, punycode); every other shape is refused naming the reason. */
export const hostname = z
  .string()
  .max(1024, 'must be at most 253 characters')
  .transform((value, ctx) => {
    const r = normalizeHostname(value);
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.reason });
      return z.NEVER;
    }
    return r.hostname;
  });

export const addDomainBody = z.strictObject({ hostname });
export const moveDomainBody = z.strictObject({ environment_id: z.uuid('must be an environment id') });

export const domainSchema = z.object({
  id: z.uuid(),
  environment_id: z.uuid(),
  hostname: z.string(),
  status: z.enum(['pending', 'verified']),
  verification: z.object({
    type: z.literal('TXT'),
    name: z.string(),
    value: z.string(),
    checks_left: z
      .number()
      .int()
      .describe('POST /domains/{id}/verify calls left this hour (12 an hour per team and hostname)'),
  }),
  verified_at: z.string().nullable(),
  last_checked_at: z.string().nullable(),
  created_at: z.string(),
});
export const domainListSchema = z.object({
  data: z.array(domainSchema),
  allowance: z.object({ used: z.number().int(), limit: z.number().int() }),
});
