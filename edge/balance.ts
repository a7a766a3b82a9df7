/**
 * An environment's web instances as the edge balances them (HAProxy: least connections, health checks). With
 * the environment's stickiness, the `vc_instance` cookie names an instance (an opaque token per environment
 * and slot): a client keeps going to it while it is in the route and answering; otherwise it gets another
 * and a new cookie.
 */
import { createHash } from 'node:crypto';

export interface Upstream {
  /** The instance's slot ("1".."N"). */
  id: string;
  host: string;
  port: number;
}

/** The cookie value that names an environment's instance (not guessable across environments). */
export function stickyToken(envId: string, id: string): string {
  return createHash('sha256').update(`${envId}\0instance\0${id}`).digest('hex').slice(0, 16);
}
