import { z } from 'zod';
import { RESOURCE_WINDOWS } from '../../db/queries/resources';
import { idParams } from '../lib/params';

export { idParams };

const planId = z.string().min(1, 'must name a plan').max(40, 'must name a plan');

export const listServersQuery = z.object({ team: z.uuid('must be a team id').optional() });

export const serverSchema = z.strictObject({
  id: z.uuid(),
  name: z.string(),
  team_id: z.uuid(),
  project_id: z.uuid(),
  environment_id: z.uuid(),
  role: z.enum(['web', 'database']),
  plan: z.string(),
  cpu: z.number(),
  memory_mb: z.number().int(),
  disk_gb: z.number().int(),
  status: z
    .enum(['running', 'resizing', 'rebooting', 'old', 'host_lost'])
    .describe(
      'old: a database server whose database moved away, until discard-old-database; host_lost: a web server whose host is lost while its volume held data (the edge answers 503 until the host is back or it is evacuated)',
    ),
  crash: z
    .strictObject({
      since: z.string().describe('When the first exit of this run of exits was seen'),
      exit_code: z.number().int().nullable().describe("The last exit's code (null: it ended on a signal)"),
      signal: z.string().nullable().describe("The signal that ended it (SIGKILL when it ran out of its plan's memory)"),
      exits: z.number().int().describe('Exits since `since`, over every instance'),
      last_exit_at: z.string(),
    })
    .nullable()
    .describe(
      "A web server whose live processes keep exiting: its host restarts them (0.5 s, doubling to 30 s) and the edge answers 503 meanwhile. null once each has stayed up 30 s, or a new release went live. The app's output goes to the project's log destination.",
    ),
  instances: z.number().int().describe('Web instances behind the edge (POST /environments/{id}/scale)'),
  monthly_price: z
    .number()
    .nullable()
    .describe("The plan's price for each instance, from the price list; null when the plan is no longer on it"),
  currency: z.string(),
  created_at: z.string(),
});
export const serverListSchema = z.strictObject({ data: z.array(serverSchema) });

export const resizeChoicesSchema = z.strictObject({
  plan: z.string().describe('The current plan'),
  currency: z.string(),
  choices: z.array(
    z.strictObject({
      plan: z.string(),
      cpu: z.number(),
      memory_mb: z.number().int(),
      disk_gb: z.number().int(),
      monthly_price: z.number(),
      monthly_price_delta: z.number().describe("The choice's monthly price minus the current one"),
    }),
  ),
});
export const resizeBody = z.strictObject({ plan: planId });

export const resourcesQuery = z.object({
  window: z.enum(RESOURCE_WINDOWS, { error: `must be one of ${RESOURCE_WINDOWS.join(', ')}` }),
});
const points = z.array(z.strictObject({ at: z.string(), value: z.number() }));
export const resourcesSchema = z.strictObject({
  window: z.enum(RESOURCE_WINDOWS),
  step: z.number().int().describe('Seconds each point averages'),
  series: z.strictObject({
    cpu: points.describe('Percent of one core'),
    memory: points.describe('Bytes'),
    disk: points.describe('Bytes'),
  }),
});

const buildPlan = z.strictObject({
  id: z.string(),
  cpu: z.number(),
  memory_mb: z.number().int(),
  max_processes: z.number().int().optional().describe('Processes and threads one step may have at once'),
  monthly_price: z.number(),
  monthly_price_delta: z.number().describe("This plan's monthly price minus the current build plan's"),
});
export const buildMachineSchema = z.strictObject({
  provider: z.string(),
  plan: z.string(),
  cpu: z.number(),
  memory_mb: z.number().int(),
  currency: z.string(),
  providers: z.array(z.strictObject({ id: z.string(), plans: z.array(buildPlan) })),
});
export const buildOptionsBody = z.strictObject({ provider: z.string().min(1, 'must name a provider').max(40) });
export const buildOptionsSchema = z.strictObject({
  provider: z.string(),
  currency: z.string(),
  plans: z.array(buildPlan),
});
export const setBuildMachineBody = z.strictObject({
  provider: z.string().min(1, 'must name a provider').max(40),
  plan: planId,
});

export const scaleSchema = z.strictObject({
  instances: z.number().int().describe('Web instances the environment runs now'),
  max: z.number().int().describe('Most instances it may run (SCALE_MAX)'),
  plan: z.string().describe("The web server's plan (each instance runs on it)"),
  currency: z.string(),
  choices: z.array(
    z.strictObject({
      instances: z.number().int(),
      monthly_price: z.number().nullable(),
      monthly_price_delta: z.number().describe("This choice's monthly price minus the current one"),
    }),
  ),
});
export const scaleBody = z.strictObject({
  instances: z.number({ error: 'must be a whole number' }).int('must be a whole number'),
});
