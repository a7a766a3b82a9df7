/**
 * The environment's Basic password on HAProxy 2.6 (docs/edge-password-and-logs.md): the configuration lines.
 *
 * Contract with the frontend that includes `basicAuthVerdict()` and `basicAuthRules()`:
 * - before the verdict, `txn.env` holds the environment id and `txn.client` the client address (after
 *   TRUST_PROXY_HOPS); the verdict (the digest compared, nothing answered or counted) comes before the request
 *   log's rules, which must know whether sc2 is taken (`basicAuthTakesSc2()`);
 * - the rules come after the allow list / blocked addresses, so a refused address never counts;
 * - the process variable `proc.vc_pw_key` (the HMAC key, base64) is set by the extra configuration file that
 *   `basicAuthKeyConfig()` writes (pass it as a second `-f`; mode 0600);
 * - sticky counter 2 (`sc2`) is this fragment's on a failed attempt and on the way to the checker (the request
 *   log's sequence has it otherwise: edge/request-log/haproxy.ts); the failures are gpc1, never gpc0, which the
 *   request log's line increments on whatever sc2 tracks; the sections added are the backends `vc_pw_fails` (a stick table) and `vc_pw_check`;
 * - `basicAuthUseBackend()` comes before the frontend's own `use_backend` lines.
 *
 * What HAProxy does per request of an environment listed in the map: more than `limit` failed attempts by
 * this address for this environment in the window -> 429 with Retry-After, even with the right password;
 * else it takes `Authorization: Basic <b64>`, base64-decodes it, HMACs it and compares the hex with the map's
 * value: equal -> on to the app. A map value `legacy` (a row with only its argon2id hash) sends a request that
 * carries Basic credentials to the control plane's checker (checker.ts), which answers 307 (same URL) once it
 * has made the digest, else 401. Anything else -> 401 with `WWW-Authenticate`; a wrong Basic header counts
 * as a failed attempt, a missing one does not (a browser's first request has none).
 */

const PW_FAILS_TABLE = 'vc_pw_fails';
const PW_CHECK_BACKEND = 'vc_pw_check';
/** The map value of an environment whose digest is not known yet (its row has the argon2id hash only). */
export const LEGACY = 'legacy';

export interface BasicAuthFragment {
  /** The map file: `<environment id> <digest hex | legacy>`, one a line (PasswordMap writes it). */
  mapFile: string;
  /** The control plane's checker (unix stream socket). */
  checkerSocket: string;
  /** Failed attempts allowed per address and environment in the window (10), the window (300 s). */
  limit?: number;
  windowSeconds?: number;
}

const defaults = (o: BasicAuthFragment) => ({ limit: 10, windowSeconds: 300, ...o });

export const WWW_AUTHENTICATE = 'Basic realm="site", charset="UTF-8"';

/** The contents of the extra configuration file that gives HAProxy the HMAC key (write it with mode 0600). */
export function basicAuthKeyConfig(key: Buffer): string {
  return ['global', `  set-var proc.vc_pw_key str(${key.toString('base64')})`, ''].join('\n');
}

/** Sections: the failed-attempts table (keyed by `address/environment`) and the checker backend. */
export function basicAuthSections(fragment: BasicAuthFragment): string[] {
  const o = defaults(fragment);
  return [
    `backend ${PW_FAILS_TABLE}`,
    `  stick-table type string len 128 size 1m expire ${o.windowSeconds * 2}s store gpc1,gpc1_rate(${o.windowSeconds}s)`,
    '',
    `backend ${PW_CHECK_BACKEND}`,
    '  mode http',
    '  timeout connect 2s',
    '  timeout server 30s',
    '  http-request set-header X-VC-Environment %[var(txn.env)]',
    `  http-response track-sc2 var(txn.vc_pw_who) table ${PW_FAILS_TABLE} if { status 401 }`,
    '  http-response sc-inc-gpc1(2) if { status 401 }',
    `  server checker unix@${o.checkerSocket}`,
    '',
  ];
}

const ON = 'vc_pw_on';

/**
 * The frontend's verdict lines, early (after `txn.env` and `txn.client` are set): whether the environment has a
 * password, the credentials' digest compared with it, whether they go to the checker. Nothing is answered here.
 */
export function basicAuthVerdict(fragment: BasicAuthFragment): string[] {
  const o = defaults(fragment);
  return [
    `http-request set-var(txn.vc_pw_want) var(txn.env),map(${o.mapFile}) if { var(txn.env) -m found }`,
    `acl ${ON} var(txn.vc_pw_want) -m found`,
    'acl vc_pw_basic req.fhdr(authorization) -m reg -i ^basic\\ +[A-Za-z0-9+/=]+$',
    `acl vc_pw_legacy var(txn.vc_pw_want) -m str ${LEGACY}`,
    `http-request set-var(txn.vc_pw_check) bool(true) if ${ON} vc_pw_legacy vc_pw_basic`,
    `http-request set-var(txn.vc_pw_got) req.fhdr(authorization),word(2,\\ ),b64dec,hmac(sha256,proc.vc_pw_key),hex,lower if ${ON} vc_pw_basic !vc_pw_legacy`,
    'acl vc_pw_ok var(txn.vc_pw_got),strcmp(txn.vc_pw_want) eq 0',
    'acl vc_pw_to_checker var(txn.vc_pw_check) -m found',
    // wrong credentials (counted below) or credentials for the checker (which counts its 401s): sc2 is kept free
    `http-request set-var(txn.vc_pw_sc2) bool(true) if ${ON} vc_pw_basic !vc_pw_ok`,
  ];
}

/** The condition under which sc2 is the password's (for the request log's rules, after the verdict). */
export function basicAuthTakesSc2(): string {
  return '{ var(txn.vc_pw_sc2) -m found }';
}

/** The frontend's `http-request` lines that answer (after the verdict and the address rules). */
export function basicAuthRules(fragment: BasicAuthFragment): string[] {
  const o = defaults(fragment);
  return [
    `http-request set-var-fmt(txn.vc_pw_who) "%[var(txn.client)]/%[var(txn.env)]" if ${ON}`,
    `acl vc_pw_locked var(txn.vc_pw_who),table_gpc1_rate(${PW_FAILS_TABLE}) ge ${o.limit}`,
    `http-request return status 429 content-type text/plain string "too many failed password attempts; try again later" hdr Retry-After ${o.windowSeconds} if ${ON} vc_pw_locked`,
    `http-request track-sc2 var(txn.vc_pw_who) table ${PW_FAILS_TABLE} if ${ON} vc_pw_basic !vc_pw_ok !vc_pw_to_checker`,
    `http-request sc-inc-gpc1(2) if ${ON} vc_pw_basic !vc_pw_ok !vc_pw_to_checker`,
    `http-request return status 401 content-type text/plain string "this site needs a username and password" hdr WWW-Authenticate "${WWW_AUTHENTICATE.replaceAll('"', '\\"')}" if ${ON} !vc_pw_ok !vc_pw_to_checker`,
  ];
}

/** The frontend's first `use_backend` line: legacy rows' credentials go to the checker. */
export function basicAuthUseBackend(): string[] {
  return [`use_backend ${PW_CHECK_BACKEND} if { var(txn.vc_pw_check) -m found }`];
}
