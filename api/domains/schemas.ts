import { z } from 'zod';
import { normalizeHostname } from './hostname';
import { idParams } from '../lib/params';

export { idParams };

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

export const domainSchema = z.strictObject({
  id: z.uuid(),
  environment_id: z.uuid(),
  hostname: z.string(),
  status: z.enum(['pending', 'verified']),
  verification: z.strictObject({
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
  certificate: z
    .strictObject({
      status: z.enum(['none', 'pending', 'issued', 'failed']),
      issuer: z.string().nullable(),
      expires_at: z.string().nullable(),
      last_error: z.string().nullable(),
    })
    .describe(
      'Automatic HTTPS: none until the domain is verified (or when ACME_DIRECTORY_URL is not set, said in ' +
        'last_error); pending while the CA is asked (retried with backoff); issued; failed after 5 attempts ' +
        '(tried again once a day). Renewed CERTIFICATE_RENEW_DAYS before expires_at.',
    ),
  created_at: z.string(),
});
export const domainListSchema = z.strictObject({
  data: z.array(domainSchema),
  allowance: z.strictObject({ used: z.number().int(), limit: z.number().int() }),
});
