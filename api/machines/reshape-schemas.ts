import { z } from 'zod';

export const shapeEnum = z.enum(['combined', 'separate'], { error: 'must be "combined" or "separate"' });

const choice = z.strictObject({
  shape: shapeEnum,
  plan: z.string().nullable().describe('The plan of the database server (separate); null for combined'),
  cpu: z.number().nullable(),
  memory_mb: z.number().int().nullable(),
  disk_gb: z.number().int().nullable(),
  monthly_price: z.number().describe('What the database server of this choice costs a month (0: none)'),
  monthly_price_delta: z.number().describe("This choice's monthly price minus the current database server's"),
});

export const reshapeSchema = z.strictObject({
  shape: shapeEnum.describe('combined: the database on the shared services server; separate: on its own server'),
  service_id: z.uuid().nullable().describe("The environment's postgresql service; null: it has none"),
  server_id: z.uuid().nullable().describe('The database server (separate); null for combined'),
  old_database: z
    .strictObject({ kept_since: z.string(), server_id: z.uuid().nullable() })
    .nullable()
    .describe('The database the last reshape left behind, until POST /environments/{id}/discard-old-database'),
  currency: z.string(),
  choices: z.array(choice).describe('Empty when the environment has no database or still keeps an old one'),
  unavailable_reason: z.string().nullable(),
});

export const reshapeBody = z.strictObject({
  shape: shapeEnum,
  plan: z
    .string()
    .min(1, 'must name a plan')
    .max(40, 'must name a plan')
    .optional()
    .describe("separate only: the database server's plan (default: the service's plan)"),
});

export const reshapePreviewSchema = z.strictObject({
  shape: shapeEnum,
  plan: z.string().nullable(),
  monthly_price_delta: z.number(),
  currency: z.string(),
  changes: z.array(z.string()),
});

export const discardOldDatabaseBody = z.strictObject({
  confirm: z.literal(true, { error: 'must be true: the old database is dropped for good' }),
});
