import { z } from 'zod';
import { idParams } from '../lib/params';

export { idParams };

export const TICKET_CATEGORIES = ['deploys', 'domains', 'data', 'billing', 'account', 'other'] as const;
/** Images, checked by their content (file-type), not by their name or the type the client claims. */
export const ATTACHMENT_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export const ATTACHMENT_LIMITS = { maxFiles: 5, maxFileBytes: 5 * 1024 * 1024 };

const text = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

/** The same fields as JSON or as multipart/form-data fields (strings), besides `attachments[]`. */
export const createBody = z.strictObject({
  subject: text(200),
  body: text(20_000),
  category: z.enum(TICKET_CATEGORIES, { error: `must be one of ${TICKET_CATEGORIES.join(', ')}` }),
  environment_id: z.uuid('must be an environment id').optional(),
});
export type CreateBody = z.infer<typeof createBody>;

export const replyBody = z.strictObject({
  body: text(20_000),
  resolved: z.boolean().optional().default(false),
});

// ---- responses -------------------------------------------------------------------------------

export const newTicketSchema = z.strictObject({
  categories: z.array(z.string()),
  attachments: z.strictObject({
    max_files: z.number(),
    max_bytes: z.number().describe('Per file'),
    types: z.array(z.string()),
  }),
});

const attachment = z.strictObject({ name: z.string(), bytes: z.number(), type: z.string() });
export const replySchema = z.strictObject({
  id: z.uuid(),
  ticket_id: z.uuid(),
  body: z.string(),
  by: z.strictObject({ id: z.uuid(), name: z.string() }).nullable(),
  resolved: z.boolean(),
  created_at: z.string(),
});
export const ticketSchema = z.strictObject({
  id: z.uuid(),
  team_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  subject: z.string(),
  body: z.string(),
  category: z.string(),
  status: z.enum(['open', 'resolved']),
  attachments: z.array(attachment),
  created_at: z.string(),
  resolved_at: z.string().nullable(),
  replies: z.array(replySchema).optional(),
});
export const ticketListSchema = z.strictObject({ data: z.array(ticketSchema) });
