import { z } from 'zod';
import { idParams } from '../lib/params';

export { idParams };

export const snapshotParams = z.object({ id: z.uuid(), snapshot: z.uuid() });

const name = z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters');
const text = (max = 1024) => z.string().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const createDestinationBody = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({ kind: z.literal('local'), name, path: text(4096) }),
    z.strictObject({
      kind: z.literal('s3'),
      name,
      endpoint: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
      region: text(64),
      bucket: text(63),
      prefix: z.string().max(512, 'must be at most 512 characters').optional(),
      access_key_id: text(256),
      secret_access_key: text(256),
    }),
  ],
  { error: 'must be local or s3' },
);
export type CreateDestination = z.infer<typeof createDestinationBody>;

/** Every field of every kind, optional: the service refuses those that are not of the destination's kind. */
export const updateDestinationBody = z.strictObject({
  name: name.optional(),
  path: text(4096).optional(),
  endpoint: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  region: text(64).optional(),
  bucket: text(63).optional(),
  prefix: z.string().max(512).optional(),
  access_key_id: text(256).optional(),
  secret_access_key: text(256).optional(),
});
export type UpdateDestination = z.infer<typeof updateDestinationBody>;

export const destinationSchema = z.strictObject({
  id: z.uuid(),
  team_id: z.uuid(),
  name: z.string(),
  kind: z.enum(['local', 's3']),
  settings: z.record(z.string(), z.string()).describe('The fields that are not secret; secret fields are never shown'),
  secret_fields: z.array(z.string()).describe('Names of the secret fields that are set'),
  snapshots: z.number().int().describe('Available snapshots kept there'),
  used_bytes: z.number().int(),
  last_error: z
    .string()
    .nullable()
    .describe(
      'Why backups there are refused now (a local destination outside BACKUP_LOCAL_ROOTS), else why the last one failed',
    ),
  created_at: z.string(),
  updated_at: z.string(),
});

export const destinationKindsSchema = z.strictObject({
  kinds: z.array(
    z.strictObject({
      kind: z.string(),
      fields: z.array(z.strictObject({ name: z.string(), required: z.boolean(), secret: z.boolean() })),
    }),
  ),
});

export const backupWindowSchema = z.strictObject({
  hour_utc: z.number().int(),
  retention_days: z.number().int(),
  destination_id: z.uuid().nullable(),
  default: z.boolean(),
});
export const setBackupWindowBody = z.strictObject({
  hour_utc: z.number().int().min(0).max(23, 'must be an hour from 0 to 23'),
  retention_days: z.number().int().min(1).max(365, 'must be 1 to 365 days'),
  destination_id: z.uuid(),
});

export const backupSchema = z.strictObject({
  id: z.uuid(),
  status: z.enum(['running', 'available', 'failed']),
  trigger: z.enum(['manual', 'scheduled']),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  size_bytes: z.number().int().nullable().describe('Stored (encrypted) size'),
  sha256: z.string().nullable().describe('SHA-256 of the stored (encrypted) bytes'),
  destination_id: z.uuid().nullable(),
  contents: z.array(z.enum(['database', 'files'])),
  key_fingerprint: z.string(),
  task_id: z.uuid().nullable(),
  error: z.string().nullable(),
  verified_at: z
    .string()
    .nullable()
    .describe(
      'When the last restore drill of the snapshot ended (null: none yet); it passed when verify_error is null',
    ),
  verify_error: z.string().nullable().describe('Why the last restore drill failed; null when it passed or none ran'),
});
export const backupListSchema = z.strictObject({ data: z.array(backupSchema) });
export const createBackupBody = z.strictObject({ destination_id: z.uuid().optional() });

export const downloadSchema = z.strictObject({ url: z.string(), expires_at: z.string() });
export const downloadQuery = z.strictObject({
  expires: z.coerce.number().int(),
  signature: z.string().regex(/^[0-9a-f]{64}$/, 'must be the signature of the URL'),
});

export const backupKeySchema = z.strictObject({
  algorithm: z.literal('AES-256-GCM'),
  fingerprint: z
    .string()
    .describe('First 16 bytes of SHA-256 of the key, hex; every snapshot names the fingerprint of its key'),
  opens: z.strictObject({ snapshots: z.number().int(), oldest: z.string().nullable(), newest: z.string().nullable() }),
});
export const revealKeySchema = z.strictObject({ key: z.string().describe('base64 of the 32-byte key') });
export const emptyBody = z.strictObject({});
export const destinationListSchema = z.strictObject({ data: z.array(destinationSchema) });
export const restoreBody = z.strictObject({ password: z.string().max(200).optional() });
export const syncSourcesSchema = z.strictObject({
  sources: z.array(z.strictObject({ environment_id: z.uuid(), name: z.string() })),
});
export const syncBody = z.strictObject({
  from_environment_id: z.uuid(),
  confirm: z.boolean().optional(),
  password: z.string().max(200).optional(),
});
export const resetDatabaseBody = z.strictObject({
  confirm: z.string().max(200).optional(),
  password: z.string().max(200).optional(),
});
