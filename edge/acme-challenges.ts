/**
 * The HTTP-01 answers of the console's own ACME orders (CONTRACT "Certificates"): on EDGE_PORT only, a
 * request for /.well-known/acme-challenge/<token> whose token the console put in `acme_challenges` for the
 * request's Host gets the key authorization, before any environment rule (allowed addresses, password,
 * maintenance, rate limit) and never redirected. Any other token goes on to the environment like every
 * request (a tenant may run its own ACME client).
 *
 * The tokens are kept in memory, reloaded on the `vc_edge` notification; a token not known yet (the order
 * was placed a moment before the notification arrived) is looked up in PostgreSQL once. Kept apart from the
 * Node edge's request handling so that the HAProxy data plane can take the same table as a map.
 */
import type http from 'node:http';
import type { Knex } from 'knex';
import { findChallenge } from '../db/queries/certificates';

export const ACME_CHALLENGE_PREFIX = '/.well-known/acme-challenge/';
/** RFC 8555 8.3: base64url characters only. */
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

interface Challenge {
  hostname: string;
  keyAuthorization: string;
}

/** The token of a challenge path, or null for any other path. */
export function challengeToken(url: string | undefined): string | null {
  if (!url?.startsWith(ACME_CHALLENGE_PREFIX)) return null;
  const token = url.slice(ACME_CHALLENGE_PREFIX.length).split('?')[0];
  return TOKEN.test(token) ? token : null;
}

export class AcmeChallenges {
  private tokens = new Map<string, Challenge>();

  constructor(private readonly knex: Knex) {}

  async load(): Promise<void> {
    const rows = await this.knex('acme_challenges').select('token', 'hostname', 'key_authorization');
    this.tokens = new Map(
      rows.map((r: { token: string; hostname: string; key_authorization: string }) => [
        r.token,
        { hostname: r.hostname, keyAuthorization: r.key_authorization },
      ]),
    );
  }

  /**
   * Answers the request when it is one of the console's challenges for `host` (true), possibly after a
   * look-up (only for a host the edge serves: `lookUp`); `next` serves it as usual otherwise. False: not a
   * challenge path at all (serve it now).
   */
  handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    host: string,
    lookUp: boolean,
    next: () => void,
  ): boolean {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const token = challengeToken(req.url);
    if (!token) return false;
    const known = this.tokens.get(token);
    if (known) {
      if (known.hostname === host) answer(req, res, known.keyAuthorization);
      else next();
      return true;
    }
    if (!lookUp) return false;
    findChallenge(this.knex, token).then(
      (row) => {
        if (row && row.hostname === host) answer(req, res, row.key_authorization);
        else next();
      },
      () => next(),
    );
    return true;
  }
}

function answer(req: http.IncomingMessage, res: http.ServerResponse, keyAuthorization: string): void {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : keyAuthorization);
}
