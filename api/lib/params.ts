import { z } from 'zod';

/** The path parameters of a route on one resource: `{id}`, a UUID. Every area's schemas take it from here. */
export const idParams = z.object({ id: z.uuid() });
