import { z } from 'zod';
import { parseSshPublicKey } from './ssh-key-format';
import { idParams } from '../lib/params';

export { idParams };

// ---------------------------------------------------------------------------------------------
// Shared pieces

const NO_CONTROL = /^[^\p{Cc}]*$/u;

export const email = z
  .string()
  .trim()
  .max(254, 'must be at most 254 characters')
  .pipe(z.email('must be an e-mail address'));

export const newPassword = z
  .string()
  .min(10, 'must be at least 10 characters')
  .max(200, 'must be at most 200 characters');

const name = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(NO_CONTROL, 'must not contain control characters');

/** Any password a person may type: length is checked only at sign-up, a wrong one is just wrong. */
const givenPassword = z.string().min(1, 'is required').max(200, 'must be at most 200 characters');

// ---------------------------------------------------------------------------------------------
// Bodies

export const signupBody = z.strictObject({ email, password: newPassword, name });
export const confirmBody = z.strictObject({
  code: z.string().trim().min(1, 'is required').max(64, 'is not a confirmation code'),
});
export const resendBody = z.strictObject({ email });
export const signInBody = z.strictObject({
  email: z.string().trim().min(1, 'is required').max(254, 'must be at most 254 characters'),
  password: givenPassword,
});
export const reauthenticateBody = z.strictObject({ password: givenPassword });

export const userCodeBody = z.strictObject({
  user_code: z.string().trim().min(1, 'is required').max(32, 'is not a code shown by the command line'),
});
export const deviceTokenBody = z.strictObject({
  device_code: z.string().min(1, 'is required').max(200, 'is not a device code'),
  /** RFC 8628 clients send this; accepted and otherwise ignored. */
  grant_type: z.literal('urn:ietf:params:oauth:grant-type:device_code').optional(),
});
export const verifyQuery = z.object({ user_code: z.string().max(32).optional() });

export const sshKeyBody = z.strictObject({
  name,
  public_key: z
    .string()
    .max(16_384, 'is too long for a public key')
    .transform((value, ctx) => {
      const parsed = parseSshPublicKey(value);
      if (!parsed.ok) {
        ctx.addIssue({ code: 'custom', message: parsed.reason });
        return z.NEVER;
      }
      return parsed.key;
    }),
});

// ---------------------------------------------------------------------------------------------
// Responses (documentation; presenters build the objects)

export const userSchema = z.strictObject({
  id: z.uuid(),
  email: z.string(),
  name: z.string(),
  email_confirmed: z.boolean(),
  created_at: z.string(),
});

export const meSchema = userSchema.extend({
  via: z.enum(['session', 'cli', 'token']),
  token: z
    .strictObject({ id: z.uuid(), team_id: z.uuid(), purpose: z.string(), expires_at: z.string() })
    .optional()
    .describe('Only when the caller is a personal access token; never the token string'),
});

export const signedInSchema = z.strictObject({ user: userSchema });
export const csrfTokenSchema = z.strictObject({ token: z.string() });
export const reauthenticatedSchema = z.strictObject({ authenticated_at: z.string() });
export const endedSessionsSchema = z.strictObject({ ended: z.number().int().describe('How many sessions were ended') });
export const acceptedSchema = z.strictObject({ message: z.string() });

export const deviceAuthorizationSchema = z.strictObject({
  device_code: z.string(),
  user_code: z.string().describe('Eight characters shown as XXXX-XXXX'),
  verification_uri: z.string(),
  verification_uri_complete: z.string(),
  interval: z.number().int().describe('Seconds to wait between polls'),
  expires_in: z.number().int().describe('Seconds until the codes stop working'),
});
export const deviceDecisionSchema = z.strictObject({ user_code: z.string(), status: z.enum(['approved', 'denied']) });
export const deviceTokenSchema = z.strictObject({
  access_token: z.string().describe('vcs_...: send as "Authorization: Bearer <access_token>"'),
  token_type: z.literal('bearer'),
  expires_in: z.number().int(),
  user: userSchema,
});
export const deviceErrorSchema = z.strictObject({
  error: z.strictObject({
    code: z.enum(['authorization_pending', 'slow_down', 'expired_token', 'access_denied']),
    message: z.string(),
  }),
});

export const sshKeySchema = z.strictObject({
  id: z.uuid(),
  name: z.string(),
  key_type: z.string(),
  public_key: z.string(),
  fingerprint: z.string().describe('SHA256:<base64 without padding>, as ssh-keygen -lf shows'),
  created_at: z.string(),
});
export const sshKeyListSchema = z.strictObject({ data: z.array(sshKeySchema) });
