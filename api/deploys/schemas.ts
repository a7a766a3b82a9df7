import { z } from 'zod';
export { taskSchema } from '../tasks/presenter';

export const environmentParams = z.object({ id: z.uuid() });

/** Deploy and redeploy: optional `skip_steps` (go live without the manifest's deploy steps). */
export const deployBody = z.strictObject({
  skip_steps: z.boolean().optional(),
});

/** Rollback and build take no fields. */
export const emptyBody = z.strictObject({});

export const deployInProgressSchema = z.strictObject({
  error: z.strictObject({ code: z.literal('deploy_in_progress'), message: z.string(), task_id: z.string().nullable() }),
});
