import { z } from 'zod';
import type { ResponseDef } from './define-route';

/** The one error body (CONTRACT "Bodies and errors"); codes may add fields such as `task_id`. */
export const errorBodySchema = z.object({
  error: z
    .object({
      code: z.string().describe('snake_case error code'),
      message: z.string().describe('A sentence for people'),
      fields: z.record(z.string(), z.string()).optional().describe('The reason per failing field'),
    })
    .loose(),
});

/** An error response of a route, documented with the error body (or a more specific schema). */
export function errorResponse(description: string, schema: z.ZodType = errorBodySchema): ResponseDef {
  return { description, schema };
}

/** The fields of a form the console draws from the API (an integration's, a repository host's kind). */
export const formFieldsSchema = z.array(
  z.strictObject({
    name: z.string(),
    type: z.string(),
    required: z.boolean(),
    secret: z.boolean(),
    description: z.string(),
  }),
);
