import { z } from 'zod';
import { idParams } from '../lib/params';

export { idParams };

/** A registry host, with its port if any: `registry.npmjs.org`, `ghcr.io`, `npm.example.com:8443`. */
export const host = z
  .string()
  .trim()
  .toLowerCase()
  .max(253, 'must be at most 253 characters')
  .regex(
    /^(?=.{1,253}(:|$))([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:\d{1,5})?$/,
    'must be a host name, with its port if any (no scheme or path)',
  );
export const hostParams = z.object({ id: z.uuid(), host });

export const createBody = z.strictObject({
  host,
  username: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(200)
    .regex(/^[^\s:]+$/, 'must not contain spaces or ":"'),
  password: z
    .string()
    .min(1, 'must not be empty')
    .max(4000, 'must be at most 4000 characters')
    .regex(/^[^\r\n]+$/, 'must be one line'),
});

const registry = z.strictObject({ host: z.string(), username: z.string(), created_at: z.string() });
export const registrySchema = registry;
export const registryListSchema = z.strictObject({ data: z.array(registry) });
