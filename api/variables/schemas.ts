import { z } from 'zod';
import { checkVariableName, checkVariableValue } from './rules';
import { idParams } from '../lib/params';

export { idParams };

export const variableName = z.string().superRefine((name, ctx) => {
  const fault = checkVariableName(name);
  if (fault) ctx.addIssue({ code: 'custom', message: fault });
});

export const variableValue = z.string().superRefine((value, ctx) => {
  const fault = checkVariableValue(value);
  if (fault) ctx.addIssue({ code: 'custom', message: fault });
});

export const nameParams = z.object({ id: z.uuid(), name: z.string().min(1).max(128) });

export const setVariableBody = z.strictObject({
  name: variableName,
  value: variableValue,
  secret: z
    .boolean()
    .optional()
    .describe('Write-only: the value is never shown again. Omitted on a replace: kept as it was'),
});

/** Pasted `.env` text; the body limit (BODY_LIMIT_BYTES) bounds it. */
const dotenvText = z.string().max(4 * 1024 * 1024, 'must be at most 4 MiB');
export const parseBody = z.strictObject({ text: dotenvText });
export const importBody = z.strictObject({
  text: dotenvText,
  secret: z
    .union([z.boolean(), z.array(variableName).max(500)], { error: 'must be true, false or a list of names' })
    .optional()
    .describe(
      'true: every created or updated variable is secret; false: none is; a list: the names of the text to store as ' +
        'secret (the others are not). Omitted: new ones are not secret and a replaced one keeps its flag',
    ),
  overwrite: z.boolean().optional().describe('Replace existing names (default: skip them)'),
});

export const variableSchema = z.strictObject({
  name: z.string(),
  value: z.string().nullable().describe('null for a secret'),
  secret: z.boolean(),
  updated_at: z.string(),
});
export const effectiveVariableSchema = variableSchema.extend({ source: z.enum(['project', 'environment']) });
export const variableListSchema = z.strictObject({ data: z.array(variableSchema) });
export const effectiveVariableListSchema = z.strictObject({
  data: z.array(effectiveVariableSchema),
  live: z
    .strictObject({
      applied: z
        .boolean()
        .describe('The live processes run with exactly this set; false after a change, until an apply or a deploy'),
      since: z.string().describe('When the live processes were started with the variables they have'),
    })
    .nullable()
    .describe('null: nothing is live, or what it was started with is not known (put live before it was recorded)'),
});
export const parsedSchema = z.strictObject({
  data: z.array(z.strictObject({ name: z.string(), value: z.string(), line: z.number().int() })),
});
export const importResultSchema = z.strictObject({
  created: z.array(z.string()),
  updated: z.array(z.string()),
  unchanged: z.array(z.string()),
  skipped: z.array(z.string()),
});
