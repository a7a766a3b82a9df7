import { z } from 'zod';
import { idParams } from '../lib/params';

export { idParams };

export const NAME_PATTERN = '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$';
export const NAME_RULES = {
  required: true,
  min_length: 1,
  max_length: 63,
  pattern: NAME_PATTERN,
  description: 'lowercase letters, digits and dashes; no dash first or last',
};
/** NAME_RULES as answered in a form's `fields.name`, with the scope the name is unique within. */
export const nameRulesSchema = z.strictObject({
  required: z.boolean(),
  min_length: z.number(),
  max_length: z.number(),
  pattern: z.string(),
  description: z.string(),
  unique_within: z.enum(['team', 'project']),
});

/** Project and environment names: 1-63 of [a-z0-9-], no leading or trailing dash. */
export const resourceName = z
  .string()
  .min(1, 'must not be empty')
  .max(63, 'must be at most 63 characters')
  .regex(new RegExp(NAME_PATTERN), 'must be lowercase letters, digits and dashes, not starting or ending with a dash');

export const repositoryUrl = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(2048, 'must be at most 2048 characters')
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters')
  .refine((s) => !s.startsWith('-'), 'must not start with "-"');

export const listProjectsQuery = z.object({ team_id: z.uuid('must be a team id').optional() });
export const createProjectBody = z.strictObject({ team_id: z.uuid('must be a team id'), name: resourceName });
export const connectRepositoryBody = z.strictObject({ url: repositoryUrl });

export const projectSchema = z.strictObject({
  id: z.uuid(),
  team_id: z.uuid(),
  name: z.string(),
  repository: z.strictObject({ url: z.string() }).nullable(),
  created_at: z.string(),
});
export const projectListSchema = z.strictObject({ data: z.array(projectSchema) });
export const newProjectSchema = z.strictObject({
  blocked: z.boolean(),
  reason: z.string().optional(),
  message: z.string().optional(),
  teams: z.array(z.strictObject({ id: z.uuid(), name: z.string() })),
  fields: z.strictObject({ team_id: z.strictObject({ required: z.boolean() }), name: nameRulesSchema }),
});
export const repositorySchema = z.strictObject({
  url: z.string().nullable(),
  default_branch: z.string().nullable().describe('Where HEAD points, as of the last check'),
  reachable: z.boolean().nullable().describe('The last check could read the repository (null: none connected)'),
  checked_at: z.string().nullable(),
  webhook_url: z.string().nullable().describe('Where the git host sends pushes (POST /hooks/git/{project_id})'),
  reason: z.string().optional().describe('Reconnect: why git could not read it'),
});
export const connectedRepositorySchema = repositorySchema.extend({
  webhook_secret: z
    .string()
    .describe('Signs the git hook (X-Hub-Signature-256); shown in this answer only: connecting again makes a new one'),
});
export const cancelBody = z.strictObject({ confirm: z.literal(true, 'must be true') });
export const cancelSchema = z.strictObject({
  project_id: z.uuid(),
  cancelled_at: z.string().nullable(),
  data_kept_days: z.number().int(),
  data_deleted_after: z.string().nullable().describe('Once cancelled: when the daily prune deletes the environments'),
  subscriptions: z.array(
    z.strictObject({
      order: z.string(),
      kind: z.string(),
      item: z.string(),
      monthly_price: z.string(),
      currency: z.string(),
      environment_id: z.string().nullable(),
    }),
  ),
  environments: z.array(z.strictObject({ id: z.uuid(), name: z.string(), stopped: z.boolean() })),
  message: z.string(),
});
/** The git host's push payload: not read (every environment with auto_deploy is compared with the repository). */
export const hookBody = z.looseObject({}).describe("The git host's payload (GitHub's push event, or {}); not read");
export const hookAnswerSchema = z.strictObject({
  data: z.array(
    z.strictObject({
      environment_id: z.uuid(),
      status: z.enum(['started', 'busy', 'up_to_date', 'already_started', 'ref_not_found', 'unreachable']),
      commit: z.string().nullable(),
      task_id: z.uuid().nullable(),
    }),
  ),
});
