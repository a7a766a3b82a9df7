import { z } from 'zod';
import { idParams } from '../lib/params';

export { idParams };

export const MAX_MANIFEST_CHARS = 64 * 1024;

const manifestText = z.string('must be the text of a service.yaml').max(MAX_MANIFEST_CHARS, 'must be at most 64 KB');

export const validateBody = z.strictObject({ manifest: manifestText });
export const validateEnvironmentBody = z.strictObject({ manifest: manifestText.optional() });

export const manifestSchema = z.strictObject({
  build: z.array(z.string()),
  deploy: z.array(z.string()),
  web: z.string().optional(),
  health: z.string().optional(),
});

export const sourceSchema = z.strictObject({
  git_ref: z.string(),
  commit_sha: z.string(),
  present: z.boolean().describe('False when the commit has no service.yaml (an empty manifest)'),
});

export const validResultSchema = z.strictObject({
  valid: z.literal(true),
  manifest: manifestSchema.describe('The manifest as it will be read, defaults filled in'),
  source: sourceSchema
    .optional()
    .describe("Where the manifest was read (environment variant without a body): the ref's head"),
});
