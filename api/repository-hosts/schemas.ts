import { z } from 'zod';
import { idParams } from '../lib/params';
import { formFieldsSchema } from '../lib/responses';

export { idParams };

export const HOST_KINDS = ['https', 'ssh'] as const;
export type HostKind = (typeof HOST_KINDS)[number];

/** What each kind asks for (GET /teams/{id}/repository-hosts/new). */
export const KIND_FIELDS: Record<
  HostKind,
  { name: string; type: string; required: boolean; secret: boolean; description: string }[]
> = {
  https: [
    {
      name: 'host',
      type: 'string',
      required: true,
      secret: false,
      description: 'the host name, with its port if not the default (git.example.com:8443); also used for http:// URLs',
    },
    {
      name: 'username',
      type: 'string',
      required: true,
      secret: false,
      description: 'the user name the token belongs to',
    },
    {
      name: 'token',
      type: 'string',
      required: true,
      secret: true,
      description: 'an access token (kept sealed, never shown)',
    },
  ],
  ssh: [
    {
      name: 'host',
      type: 'string',
      required: true,
      secret: false,
      description:
        'the host name (e.g. github.com); the console makes a key pair and shows its public key, to add at the host as a deploy key',
    },
  ],
};

/** A host name (or address) with, for https, an optional port: nothing else (no scheme, user, path). */
function hostField(withPort: boolean) {
  return z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .transform((s, ctx) => {
      let u: URL | null = null;
      try {
        u = /^[^/?#@\s]+$/.test(s) ? new URL(`https://${s}`) : null;
      } catch {
        u = null;
      }
      if (!u?.hostname || (!withPort && u.port) || u.pathname !== '/' || u.search || u.hash) {
        ctx.addIssue({
          code: 'custom',
          message: withPort
            ? 'must be a host name with an optional port (git.example.com or git.example.com:8443), without scheme or path'
            : 'must be a host name (git.example.com), without user, port or path',
        });
        return z.NEVER;
      }
      return withPort ? u.host.toLowerCase() : u.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
    });
}

const username = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .refine((s) => !/[\s:]/.test(s), 'must not contain spaces or colons');
const token = z
  .string()
  .min(1, 'must not be empty')
  .max(4000, 'must be at most 4000 characters')
  .refine((s) => !/[\r\n\0]/.test(s), 'must be one line');

export const createBody = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({ kind: z.literal('https'), host: hostField(true), username, token }),
    z.strictObject({ kind: z.literal('ssh'), host: hostField(false) }),
  ],
  { error: `must be one of ${HOST_KINDS.join(', ')}` },
);
export type CreateBody = z.infer<typeof createBody>;

// ---- responses -------------------------------------------------------------------------------

export const newHostSchema = z.strictObject({
  kinds: z.array(
    z.strictObject({
      kind: z.enum(HOST_KINDS),
      fields: formFieldsSchema,
    }),
  ),
});

export const hostSchema = z.strictObject({
  id: z.uuid(),
  team_id: z.uuid(),
  kind: z.enum(HOST_KINDS),
  host: z.string(),
  username: z.string().optional().describe('https: the user name (the token is never shown)'),
  public_key: z.string().optional().describe('ssh: the public key to add on the host (OpenSSH format)'),
  created_at: z.string(),
});
export const hostListSchema = z.strictObject({ data: z.array(hostSchema) });
