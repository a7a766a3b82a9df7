import { z } from 'zod';
import { idParams } from '../lib/params';

export { idParams };

const row = z.strictObject({
  task_id: z.uuid(),
  kind: z.string(),
  type: z.string(),
  status: z.string(),
  project_id: z.uuid().nullable(),
  environment_id: z.uuid().nullable(),
  summary: z.string(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
});
const bell = z.strictObject({ count: z.number(), data: z.array(row).describe('The first 5, newest first') });

export const notificationsSchema = z.strictObject({
  waiting: bell.describe('Tasks pending or running'),
  finished: bell.describe('Tasks finished since the caller last marked the activity seen'),
  seen_at: z.string().nullable().describe('When the caller last marked the activity seen'),
});
