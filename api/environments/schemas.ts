import { z } from 'zod';
import { nameRulesSchema, resourceName } from '../projects/schemas';
import { limitParam, timeIdCursorParam } from '../lib/pagination';
import { backupSchema } from '../backups/schemas';
import { idParams } from '../lib/params';

export { idParams };

/** The kind of the `before` cursors of GET /environments (api/lib/pagination.ts). */
export const ENVIRONMENTS_CURSOR = 'e';

/** A branch, tag, full ref or commit id, as git allows it (check-ref-format, roughly). */
export const gitRef = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .refine(
    (s) =>
      !/[\u0000-\u0020\u007f~^:?*[\\]/.test(s) &&
      !s.startsWith('-') &&
      !s.startsWith('/') &&
      !s.endsWith('/') &&
      !s.endsWith('.') &&
      !s.endsWith('.lock') &&
      !s.includes('..') &&
      !s.includes('//') &&
      !s.includes('@{') &&
      s !== '@',
    'must be a branch, tag or commit name git accepts',
  );

export const createEnvironmentBody = z.strictObject({
  name: resourceName,
  git_ref: gitRef,
  auto_deploy: z.boolean().optional(),
});

export const updateEnvironmentBody = z
  .strictObject({ git_ref: gitRef.optional(), auto_deploy: z.boolean().optional() })
  .refine((b) => b.git_ref !== undefined || b.auto_deploy !== undefined, {
    message: 'give git_ref, auto_deploy or both',
    path: ['body'],
  });

export const listEnvironmentsQuery = z.object({
  team_id: z.uuid('must be a team id').optional(),
  project_id: z.uuid('must be a project id').optional(),
  limit: limitParam(100),
  before: timeIdCursorParam(ENVIRONMENTS_CURSOR).optional(),
});

export const environmentSchema = z.strictObject({
  id: z.uuid(),
  project_id: z.uuid(),
  team_id: z.uuid(),
  name: z.string(),
  git_ref: z.string(),
  auto_deploy: z.boolean(),
  url: z.string(),
  protected: z
    .boolean()
    .describe(
      'Restoring over it needs the password again and a recent sign-in; an environment named production is protected when created',
    ),
  created_at: z.string(),
  maintenance: z
    .strictObject({ on: z.boolean(), note: z.string().nullable(), since: z.string().nullable() })
    .describe('Maintenance mode (POST /environments/{id}/maintenance)'),
});
export const environmentPageSchema = z.strictObject({
  data: z.array(environmentSchema),
  next_before: z.string().nullable(),
});
export const environmentChoicesSchema = z.strictObject({
  blocked: z.boolean(),
  reason: z.enum(['no_repository', 'repository_unreachable', 'no_branches']).optional(),
  message: z.string().optional(),
  fields: z
    .strictObject({
      name: nameRulesSchema.extend({ taken: z.array(z.string()).describe('Names already used in the project') }),
      git_ref: z.strictObject({
        required: z.boolean(),
        branches: z.array(z.string()),
        default: z.string(),
        description: z.string(),
      }),
      auto_deploy: z.strictObject({ required: z.boolean(), default: z.boolean() }),
    })
    .optional()
    .describe('What the form asks for; absent when blocked'),
});

export const deleteEnvironmentBody = z.strictObject({
  confirm: z
    .string()
    .max(200)
    .optional()
    .describe("The environment's name; required when it is protected (else 422 on confirm)"),
});

export const deletedEnvironmentListSchema = z.strictObject({
  data: z.array(
    z.strictObject({
      id: z.uuid(),
      name: z.string(),
      protected: z.boolean(),
      deleted_at: z.string(),
      kept_until: z.string().describe('When the daily prune removes its tasks, activity and snapshots'),
      snapshots: z.array(backupSchema),
    }),
  ),
});
