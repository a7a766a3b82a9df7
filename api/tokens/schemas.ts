import { z } from 'zod';

const TOKEN_LIFETIMES = [7, 30, 90] as const;

export const tokenIdParams = z.object({ id: z.uuid() });

/** POST /me/tokens: what the token is for, its one team, and its lifetime in days. */
export const createTokenBody = z.strictObject({
  purpose: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(100, 'must be at most 100 characters')
    .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters'),
  team_id: z.uuid('must be the id of a team you are a member of'),
  expires_in_days: z.literal(TOKEN_LIFETIMES, {
    error: (issue) => (issue.input === undefined ? 'is required' : 'must be 7, 30 or 90'),
  }),
});
export type CreateTokenInput = z.infer<typeof createTokenBody>;

export const tokenSchema = z.strictObject({
  id: z.string(),
  purpose: z.string(),
  team_id: z.string(),
  status: z.enum(['active', 'expired', 'revoked']),
  created_at: z.string(),
  expires_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});
export type TokenView = z.infer<typeof tokenSchema>;

export const issuedTokenSchema = tokenSchema.extend({
  token: z.string().describe('The token string (vcp_...). Shown in this answer only; it cannot be shown again.'),
});

export const tokenListSchema = z.strictObject({ data: z.array(tokenSchema) });
