import { z } from 'zod';

/** At most a year: a longer default would keep answers far past any sensible release cycle. */
export const MAX_TTL_SECONDS = 31_536_000;

export const cdnSchema = z.strictObject({
  enabled: z.boolean(),
  default_ttl_seconds: z.number().int(),
});

export const cdnBody = z
  .strictObject({
    enabled: z.boolean().optional(),
    default_ttl_seconds: z
      .number()
      .int('must be a whole number of seconds')
      .min(1, 'must be at least 1')
      .max(MAX_TTL_SECONDS, `must be at most ${MAX_TTL_SECONDS} (a year)`)
      .optional()
      .describe('For public answers that give neither s-maxage nor max-age'),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give enabled or default_ttl_seconds', path: ['body'] });

const prefix = z
  .string()
  .min(1, 'must not be empty')
  .max(2048, 'must be at most 2048 characters')
  .refine((p) => p.startsWith('/'), 'must start with /')
  .refine((p) => !/[\s#]/.test(p), 'must not contain spaces or #');

export const cdnClearBody = z.strictObject({
  paths: z
    .array(prefix)
    .max(100, 'at most 100 prefixes')
    .optional()
    .describe('Path prefixes (with the query, if any, as requested); none or empty: everything'),
});
