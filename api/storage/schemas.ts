import { z } from 'zod';
import { DISKS } from '../../db/queries/storage';
import { idParams } from '../lib/params';

export { idParams };

/** The most storage one environment may have (GB): an allowance, a split or a grow past it is refused (422). */
export const MAX_ALLOWANCE_GB = 10_000;

export const diskParams = z.object({
  id: z.uuid(),
  disk: z.enum(DISKS, { error: `must be one of ${DISKS.join(', ')}` }),
});
const gb = (what: string) =>
  z
    .number({ error: `must be a whole number of GB` })
    .int('must be a whole number of GB')
    .min(1, `${what} is at least 1 GB`)
    .max(MAX_ALLOWANCE_GB, `must be at most ${MAX_ALLOWANCE_GB} GB`);

const usedBytes = z.strictObject({
  database: z.number().int().describe('Bytes the service database takes (pg_database_size); 0 without a service'),
  files: z.number().int().describe('Bytes the volume takes on its disk (du)'),
});

export const allowanceSchema = z.strictObject({
  allowance_gb: z.number().int().describe('Storage of the environment: its two disks sum to it'),
  included_gb: z.number().int().describe("What the web server's plan includes; the rest is a paid subscription"),
  used_bytes: usedBytes,
  monthly_price: z
    .number()
    .describe('What the storage beyond the plan costs a month (price list storage.monthly_price_per_gb)'),
  currency: z.string(),
  order: z.string().nullable().describe('The subscription paying for the storage beyond the plan, or null'),
});
export const allowanceBody = z.strictObject({ allowance_gb: gb('the allowance') });

export const splitSchema = z.strictObject({ database_gb: z.number().int(), files_gb: z.number().int() });
export const splitBody = z.strictObject({ database_gb: gb('a disk'), files_gb: gb('a disk') });

export const diskSchema = z.strictObject({
  disk: z.enum(DISKS),
  size_gb: z.number().int(),
  location: z.string().describe('The root of STORAGE_ROOTS the disk lives under'),
  volume_id: z
    .uuid()
    .nullable()
    .describe('The `files` disk is the environment volume (GET /volumes/{id}/grow); null for `database`'),
  old_location: z
    .string()
    .nullable()
    .describe('Where the copy left by the last move is kept until POST /environments/{id}/storage/discard; null: none'),
  used_bytes: z.number().int(),
  roots: z
    .array(z.string())
    .describe(
      "Where the disk may move: the roots of STORAGE_ROOTS of the machine it is on (the volume's: the environment's host; the database disk's: the services server)",
    ),
});
export const diskBody = z.strictObject({ size_gb: gb('a disk') });
export const moveBody = z.strictObject({
  location: z.string().min(1, 'must name a root of STORAGE_ROOTS').max(4096, 'must name a root of STORAGE_ROOTS'),
});
export const discardBody = z.strictObject({ confirm: z.boolean().optional() });

export const growSchema = z.strictObject({
  size_gb: z.number().int().describe("The volume's size now"),
  currency: z.string(),
  choices: z.array(
    z.strictObject({
      size_gb: z.number().int(),
      monthly_price_delta: z.number().describe('What growing to this size adds to the monthly bill'),
    }),
  ),
});
export const growBody = z.strictObject({
  size_gb: z.number({ error: 'must be a whole number of GB' }).int('must be a whole number of GB'),
});
