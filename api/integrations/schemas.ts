import { z } from 'zod';
import { INTEGRATION_EVENTS, KIND_NAMES, type IntegrationKind } from '../../core/integration-kinds';
import { idParams } from '../lib/params';
import { formFieldsSchema } from '../lib/responses';

export { idParams };

const name = z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters');
const events = z
  .array(z.enum(INTEGRATION_EVENTS, { error: `must be one of ${INTEGRATION_EVENTS.join(', ')}` }))
  .min(1, 'must name at least one event')
  .transform((e) => [...new Set(e)]);
/** An http(s) URL without credentials in it; where it may point is checked again at each delivery. */
const url = z
  .string()
  .trim()
  .max(2000, 'must be at most 2000 characters')
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && !!u.hostname;
    } catch {
      return false;
    }
  }, 'must be an http:// or https:// URL (without credentials)');

const kind = z.enum(KIND_NAMES as [IntegrationKind, ...IntegrationKind[]], {
  error: `must be one of ${KIND_NAMES.join(', ')}`,
});
export const fieldsBody = z.strictObject({ kind });

export const createBody = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({ kind: z.literal('webhook'), name, events, url }),
    z.strictObject({ kind: z.literal('slack'), name, events, webhook_url: url }),
  ],
  { error: `must be one of ${KIND_NAMES.join(', ')}` },
);
export type CreateBody = z.infer<typeof createBody>;

/** Changes what it is given; the kind stays. */
export const updateBody = z.strictObject({
  name: name.optional(),
  events: events.optional(),
  url: url.optional(),
  webhook_url: url.optional(),
});
export type UpdateBody = z.infer<typeof updateBody>;

// ---- responses -------------------------------------------------------------------------------

export const newIntegrationSchema = z.strictObject({
  kinds: z.array(z.strictObject({ kind: z.string(), name: z.string() })),
  events: z.array(z.string()),
});
export const fieldsSchema = z.strictObject({ fields: formFieldsSchema });

export const deliverySchema = z.strictObject({
  id: z.uuid(),
  event: z.string(),
  event_id: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number(),
  response_status: z.number().nullable(),
  last_attempt_at: z.string().nullable(),
  created_at: z.string(),
});

export const integrationSchema = z.strictObject({
  id: z.uuid(),
  team_id: z.uuid(),
  kind: z.string(),
  name: z.string(),
  events: z.array(z.string()),
  url: z
    .string()
    .optional()
    .describe(
      'A webhook\'s URL without userinfo, query values shown as "redacted" (a Slack URL is secret and not shown)',
    ),
  created_at: z.string(),
  updated_at: z.string(),
  deliveries: z.array(deliverySchema).optional().describe('The last 20 deliveries, newest first'),
});
export const createdIntegrationSchema = integrationSchema.extend({
  secret: z.string().optional().describe("A webhook's signing secret, `whsec_<base64 key>`: shown only in this answer"),
});

export const integrationListSchema = z.strictObject({
  data: z.array(integrationSchema).describe("The team's integrations, oldest first, without their deliveries"),
});
