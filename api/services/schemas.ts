import { z } from 'zod';
import { idParams } from '../lib/params';

export { idParams };

export const serviceKind = z.enum(['postgresql'], { error: 'must be postgresql' });
const planSchema = z.strictObject({
  id: z.string(),
  cpu: z.number(),
  memory_mb: z.number().int(),
  disk_gb: z.number().int(),
  max_processes: z.number().int().optional().describe('Processes and threads one process tree may have at once'),
  monthly_price: z.number(),
});

export const serviceChoicesSchema = z.strictObject({
  data: z.array(z.strictObject({ kind: z.string(), versions: z.array(z.string()), plans: z.array(planSchema) })),
});
export const serviceBody = z.strictObject({
  kind: serviceKind,
  plan: z.string().min(1, 'must not be empty').max(40),
  version: z.string().max(10).optional(),
});
export const previewSchema = z.strictObject({
  monthly_price_delta: z.number(),
  currency: z.string(),
  changes: z.array(z.string()),
});
export const serviceSchema = z.strictObject({
  id: z.uuid(),
  kind: z.string(),
  version: z.string(),
  plan: z.string(),
  status: z.enum(['creating', 'available', 'failed']),
  server_id: z.uuid().nullable(),
  created_at: z.string(),
});
export const serviceListSchema = z.strictObject({ data: z.array(serviceSchema) });
