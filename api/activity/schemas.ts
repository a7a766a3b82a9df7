import { z } from 'zod';
import { ACTIVITY_KINDS } from '../../db/vocabulary';
import { limitParam, timeIdCursorParam } from '../lib/pagination';
import { idParams } from '../lib/params';

export { idParams };

export const ACTIVITY_CURSOR = 'a';
export const activityQuery = z.strictObject({
  project: z.uuid().optional(),
  environment: z.uuid().optional(),
  kind: z.enum(ACTIVITY_KINDS, { error: `must be one of ${ACTIVITY_KINDS.join(', ')}` }).optional(),
  type: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a type name (snake_case)')
    .optional(),
  limit: limitParam(50),
  before: timeIdCursorParam(ACTIVITY_CURSOR).optional(),
});
export type ActivityQuery = z.infer<typeof activityQuery>;

export const activityEventSchema = z.strictObject({
  id: z.uuid(),
  at: z.string(),
  actor: z.strictObject({ id: z.uuid().nullable(), name: z.string().nullable(), via: z.string() }),
  kind: z.string(),
  type: z.string(),
  project_id: z.uuid().nullable(),
  environment_id: z.uuid().nullable(),
  task_id: z.uuid().nullable(),
  address: z.string().nullable(),
  summary: z.string(),
});
export const activityPageSchema = z.strictObject({
  data: z.array(activityEventSchema),
  next_before: z.string().nullable(),
});
