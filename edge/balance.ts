/**
 * How the edge chooses among an environment's web instances: least connections (requests under way through
 * this edge), ties broken in turn, so that requests spread over every instance. An instance that refused a
 * connection is skipped for `deadMs` (while others answer). With the environment's stickiness, the
 * `vc_instance` cookie names an instance (an opaque token per environment and slot): a client keeps going to
 * it while it is in the route and answering; otherwise it gets another and a new cookie.
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';

export interface Upstream {
  /** The instance's slot ("1".."N"). */
  id: string;
  host: string;
  port: number;
}

export const STICKY_COOKIE = 'vc_instance';

/** The cookie value that names an environment's instance (not guessable across environments). */
export function stickyToken(envId: string, id: string): string {
  return createHash('sha256').update(`${envId}\0instance\0${id}`).digest('hex').slice(0, 16);
}

/** The `vc_instance` cookie's value in a request, if any. */
export function stickyCookie(req: http.IncomingMessage): string | undefined {
  const m = new RegExp(`(?:^|;\\s*)${STICKY_COOKIE}=([0-9a-f]{1,64})(?:;|$)`).exec(req.headers.cookie ?? '');
  return m?.[1];
}

export function setStickyCookie(token: string): string {
  return `${STICKY_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax`;
}

const keyOf = (u: Upstream) => `${u.host}:${u.port}`;

export class Balancer {
  private readonly inflight = new Map<string, number>();
  private readonly deadUntil = new Map<string, number>();
  private readonly turn = new Map<string, number>();

  constructor(private readonly deadMs = 2000) {}

  /**
   * The instance for a request: the sticky one when `token` names one that is alive and not in `exclude`,
   * else the alive one with the fewest requests under way (in turn on ties); when every one seems dead,
   * any not excluded. Null when none is left.
   */
  pick(envId: string, upstreams: Upstream[], o: { token?: string; exclude?: Set<string> } = {}): Upstream | null {
    const now = Date.now();
    const candidates = upstreams.filter((u) => !o.exclude?.has(keyOf(u)));
    if (candidates.length === 0) return null;
    const alive = candidates.filter((u) => (this.deadUntil.get(keyOf(u)) ?? 0) <= now);
    if (o.token) {
      const sticky = alive.find((u) => stickyToken(envId, u.id) === o.token);
      if (sticky) return sticky;
    }
    const pool = alive.length ? alive : candidates;
    const start = this.turn.get(envId) ?? 0;
    this.turn.set(envId, (start + 1) % 1_000_000);
    let best: Upstream | null = null;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (let i = 0; i < pool.length; i++) {
      const u = pool[(start + i) % pool.length];
      const load = this.inflight.get(keyOf(u)) ?? 0;
      if (load < bestLoad) {
        best = u;
        bestLoad = load;
      }
    }
    return best;
  }

  /** Counts a request under way on `u`; the returned function ends it (once). */
  acquire(u: Upstream): () => void {
    const key = keyOf(u);
    this.inflight.set(key, (this.inflight.get(key) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.inflight.get(key) ?? 1) - 1;
      if (left > 0) this.inflight.set(key, left);
      else this.inflight.delete(key);
    };
  }

  /** `u` refused or dropped a connection: skipped for a while. */
  markDead(u: Upstream): void {
    this.deadUntil.set(keyOf(u), Date.now() + this.deadMs);
  }

  static key = keyOf;
}
