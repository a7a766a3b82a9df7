/**
 * The HTTP-01 answers of the console's own ACME orders (CONTRACT "Certificates"): on EDGE_PORT only, a
 * request for /.well-known/acme-challenge/<token> whose token the console put in `acme_challenges` for the
 * request's Host gets the key authorization, before any environment rule (allowed addresses, password,
 * maintenance, rate limit) and never redirected. Any other token goes on to the environment like every
 * request (a tenant may run its own ACME client).
 *
 * HAProxy answers them from a map (`<hostname>/.well-known/acme-challenge/<token>` -> key authorization),
 * which the control plane fills from `acme_challenges` (announced on `vc_edge`); the order waits until every
 * live edge has it before it asks the CA to validate (activities/certificates/acme.ts).
 */
import type { Knex } from 'knex';

const ACME_CHALLENGE_PREFIX = '/.well-known/acme-challenge/';
/** RFC 8555 8.3: base64url characters only. */
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
const KEY_AUTHORIZATION = /^[A-Za-z0-9_.-]{1,1024}$/;

/** The challenges as map entries: `<hostname><path>` -> key authorization (well-formed ones only). */
export async function loadChallenges(knex: Knex): Promise<Map<string, string>> {
  const rows = await knex('acme_challenges').select('token', 'hostname', 'key_authorization');
  const out = new Map<string, string>();
  for (const r of rows as { token: string; hostname: string; key_authorization: string }[]) {
    if (!TOKEN.test(r.token) || !KEY_AUTHORIZATION.test(r.key_authorization) || /\s/.test(r.hostname)) continue;
    out.set(`${r.hostname.toLowerCase()}${ACME_CHALLENGE_PREFIX}${r.token}`, r.key_authorization);
  }
  return out;
}
