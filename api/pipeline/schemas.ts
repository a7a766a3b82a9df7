import { z } from 'zod';
import { gitRef } from '../environments/schemas';
import { limitParam, timeIdCursorParam } from '../lib/pagination';
import { idParams } from '../lib/params';

export { idParams };

export const RELEASES_CURSOR = 'r';

export const listReleasesQuery = z.object({
  branch: gitRef.optional(),
  limit: limitParam(20),
  before: timeIdCursorParam(RELEASES_CURSOR).optional(),
});

const commitMessage = z
  .string()
  .nullable()
  .describe("The commit's subject (`git log -1 --format=%s`, at most 200 characters), recorded at build; null before");

export const releaseSchema = z.strictObject({
  id: z.uuid(),
  environment_id: z.uuid(),
  git_ref: z.string(),
  commit_sha: z.string(),
  commit_message: commitMessage,
  status: z.enum(['building', 'ready', 'failed']),
  built_at: z.string().nullable(),
  created_at: z.string(),
  live: z.boolean().describe("True while it is its environment's live release"),
});
export const releasePageSchema = z.strictObject({ data: z.array(releaseSchema), next_before: z.string().nullable() });

const releaseRef = z.strictObject({
  id: z.uuid(),
  git_ref: z.string(),
  commit_sha: z.string(),
  commit_message: commitMessage,
  built_at: z.string().nullable(),
});

const liveRef = releaseRef.extend({
  serving: z
    .strictObject({
      web: z
        .string()
        .nullable()
        .describe('The command of its web process; null: none, visitors get 503 "no web process"'),
      health: z.string().nullable().describe('The path checked before it went live; null: none'),
    })
    .nullable()
    .describe(
      'What its service.yaml says about serving, read at its build; null for a release built before it was recorded',
    ),
  went_live: z
    .strictObject({ task_id: z.uuid(), at: z.string() })
    .nullable()
    .describe('The deployment that last put it live: its task (who asked, how long it took) and when'),
});

export const DEPLOY_BLOCKS = [
  'forbidden',
  'no_repository',
  'deploy_in_progress',
  'repository_unreachable',
  'ref_not_found',
] as const;

export const deployChoicesSchema = z.union([
  z.strictObject({
    allowed: z.literal(true),
    git_ref: z.string(),
    head_commit: z.string().describe('The commit a deploy would build and put live now'),
    head_built: z.boolean().describe('A ready release of that commit exists: a deploy skips the build'),
    live_release: liveRef.nullable(),
    rollback_release: releaseRef
      .nullable()
      .describe('What POST /environments/{id}/rollback would put live; null: nothing to roll back to'),
    skip_steps_allowed: z.literal(true),
  }),
  z.strictObject({
    allowed: z.literal(false),
    reason: z.enum(DEPLOY_BLOCKS),
    message: z.string(),
    git_ref: z.string(),
    task_id: z.uuid().optional().describe('deploy_in_progress: the running task'),
  }),
]);

export const sourceSchema = z.strictObject({
  repository: z.strictObject({ url: z.string().describe('Without credentials') }).nullable(),
  git_ref: z.string(),
  head_commit: z.string().nullable(),
  error: z
    .strictObject({ code: z.enum(['repository_unreachable', 'ref_not_found']), message: z.string() })
    .optional()
    .describe('Why head_commit is null while a repository is connected'),
});
