import { z } from 'zod';

const name = z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters');

const url = z
  .string()
  .max(2000, 'must be at most 2000 characters')
  .refine((u) => {
    try {
      const p = new URL(u);
      return (p.protocol === 'http:' || p.protocol === 'https:') && p.hostname.length > 0;
    } catch {
      return false;
    }
  }, 'must be an http:// or https:// URL');

const host = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(253, 'must be at most 253 characters')
  .regex(/^[A-Za-z0-9.:_[\]-]+$/, 'must be a host name or an IP address');

export const destinationBody = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('http'),
    name,
    url: url.describe('Receives POSTs of newline-delimited JSON; may carry credentials (kept sealed, never shown)'),
  }),
  z.strictObject({
    kind: z.literal('syslog'),
    name,
    host,
    port: z.number().int('must be a whole number').min(1, 'must be at least 1').max(65535, 'must be at most 65535'),
    protocol: z.enum(['udp', 'tcp']),
  }),
]);

export const projectLogsBody = z
  .strictObject({
    destination: destinationBody.nullable().optional().describe('null: no forwarding'),
    keep_days_on_machine: z
      .number()
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(30, 'must be at most 30')
      .optional(),
  })
  .refine((b) => b.destination !== undefined || b.keep_days_on_machine !== undefined, {
    message: 'give destination, keep_days_on_machine or both',
    path: ['body'],
  });

export const projectLogsSchema = z.strictObject({
  destination: z
    .union([
      z.strictObject({
        kind: z.literal('http'),
        name: z.string(),
        url: z.string().describe('Without userinfo; query values shown as "redacted"'),
      }),
      z.strictObject({
        kind: z.literal('syslog'),
        name: z.string(),
        host: z.string(),
        port: z.number().int(),
        protocol: z.enum(['udp', 'tcp']),
      }),
    ])
    .nullable(),
  can_send: z.boolean().describe('Whether the last test send arrived (2xx for http)'),
  last_sent_at: z.string().nullable(),
  last_error: z.string().nullable(),
  keep_days_on_machine: z.number().int(),
});

export const environmentLogsSchema = z.strictObject({
  destination: z.strictObject({ kind: z.enum(['http', 'syslog']), name: z.string() }).nullable(),
  can_send: z.boolean(),
  machines: z.array(z.strictObject({ server_id: z.string(), keeps_days: z.number().int() })),
});
