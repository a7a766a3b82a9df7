import { z } from 'zod';
import { limitParam, seqCursorParam } from '../lib/pagination';
import { taskSchema } from './presenter';

export { taskSchema };

import { TASK_KINDS } from '../../db/vocabulary';
import { TASK_PHASES } from '../../db/queries/task-phases';
import { idParams } from '../lib/params';

export { idParams };

export { TASK_KINDS };

/** The cursor kind of GET /tasks (a cursor of another list is refused). */
export const TASKS_CURSOR = 't';

export const listTasksQuery = z.object({
  team: z.uuid('must be a team id').optional(),
  project: z.uuid('must be a project id').optional(),
  environment: z.uuid('must be an environment id').optional(),
  kind: z.enum(TASK_KINDS, `must be one of ${TASK_KINDS.join(', ')}`).optional(),
  type: z
    .string('must be a task type such as deploy or build')
    .regex(/^[a-z][a-z0-9_-]{0,39}$/, 'must be a task type such as deploy or build')
    .optional(),
  limit: limitParam(20),
  before: seqCursorParam(TASKS_CURSOR).optional(),
});

export const taskPageSchema = z.strictObject({ data: z.array(taskSchema), next_before: z.string().nullable() });

export const getTaskQuery = z.object({
  include: z
    .string('must be "log"')
    .regex(/^log(,log)*$/, 'must be "log"')
    .optional(),
});

export const taskWithLogSchema = taskSchema.extend({
  phases: z
    .array(z.strictObject({ name: z.enum(TASK_PHASES), at: z.string() }))
    .describe(
      'When each phase of a deploy-like task ended, in order (queued, started, build_done, release_ready, ' +
        'process_started, healthy, edge_switched, old_stopped); a phase not reached is absent; empty for other types',
    ),
  log_tail: z.string().optional().describe('The last ~4 KB of the log, starting at a line start (include=log)'),
  log_seq: z
    .number()
    .int()
    .optional()
    .describe('Sequence number of the last log chunk; pass it as `after` to GET /tasks/{id}/log'),
});

export const taskLogQuery = z.object({
  after: z.coerce
    .number('must be a whole number, the X-Log-Seq of an earlier read')
    .int('must be a whole number, the X-Log-Seq of an earlier read')
    .min(0, 'must be 0 or more')
    .max(2_147_483_647, 'must be at most 2147483647')
    .optional(),
});
