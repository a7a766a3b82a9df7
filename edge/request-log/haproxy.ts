/**
 * The request log on HAProxy 2.6 (CONTRACT "Logs", docs/edge-password-and-logs.md): the configuration lines.
 *
 * HAProxy writes one JSON line per request (every request of an environment: refused ones, upgrades, the
 * app's answers) into the ring `vc_requests`, which forwards it to the shipper process's unix socket
 * (processes/shipper.ts, logs/request-reader.ts): the edge's control plane reads none of them. While the
 * shipper is down the lines wait in the ring (its `size`) and are sent when it listens again; what overflows
 * is lost, and the reader counts it from the per-environment sequence number.
 *
 * Contract with the frontend:
 * - `txn.env` (environment id) and `txn.client` (client address after TRUST_PROXY_HOPS) are set first, then
 *   `requestLogRules()` come before any rule that may refuse or answer (deny, return, redirect, 401/403/429/
 *   503): what they capture (method, path, user agent) is what a refused request is logged with;
 * - `requestLogFrontend()` goes into the frontend (its `log` and `log-format` lines);
 * - `requestLogGlobal()` goes into the global section (the process's epoch); `requestLogSections()` adds the
 *   ring `vc_requests` and the sequence table `vc_log_seq`;
 * - sticky counter 2 (`sc2`) is shared with the password (edge/basic-auth/haproxy.ts): `requestLogRules()` track it
 *   on the sequence table for every request of an environment, except those the password counts as a failed
 *   attempt (its `basicAuthTakesSc2()` condition, passed as `unless`), which must be decided before. HAProxy 2.6 has
 *   three sticky counters: the rate limit has sc0, the per-address connection limits sc1.
 *
 * The line: `<q> <e> <seconds.ms> <un> <JSON>`, where `q` is the sequence number of the environment in this
 * HAProxy process (taken when the line is written; `0` or `-` for a line that has none), `e` the process's epoch
 * (a new one at every start and reload), then the accept time, how many User-Agent headers there were (`un`), and
 * CONTRACT's line as JSON without its time: `environment_id`, `type`, `method` (at most 64 bytes), `path` without
 * the query (at most 2048 bytes), `status`, `bytes` sent to the client (headers included), `duration_ms` (active
 * time), `client_address`, `user_agent` (at most 512 bytes). The strings a client writes go through the
 * `json(utf8s)` converter: quotes, backslashes and control characters are escaped and invalid UTF-8 is dropped,
 * so the JSON is valid and the shipper's reader (logs/request-reader.ts) passes it on without parsing it.
 */

import { MAX_LINE } from '../../logs/request-reader';

const REQUEST_RING = 'vc_requests';

/**
 * The sequence numbers: an entry per environment in this stick table, its gpc0 incremented when the line is
 * written (`%[sc2_inc_gpc0]`, under the entry's lock: one counter per environment for all of HAProxy's threads,
 * with no Lua). An entry idle 7 days expires, and its environment's numbers start again at 1 (the reader knows).
 * A line whose sc2 is the password's (a failed attempt) gets `0`: that table stores no gpc0, so the increment
 * there does nothing and counts nothing. A Lua converter per thread cost HAProxy ~9.6 µs a request more
 * (`npm run bench -- edge-variants`, docs/benchmarks.md).
 */
export const REQUEST_SEQUENCE_TABLE = 'vc_log_seq';

export interface RequestLogFragment {
  /** The shipper's unix stream socket (its RequestLogReader listens there). */
  socket: string;
  /**
   * The ring's size in bytes: what waits while the shipper is down or behind (default 16 MiB, ~60,000 lines: two
   * seconds at the edge's saturating rate on a 2-core machine, the time a restarted shipper takes to start and warm
   * up; with 4 MiB, a shipper killed under `wrk` at ~28,000 requests a second lost ~32,000 lines, counted).
   */
  ringSize?: number;
}

const s = (fetch: string) => `%[${fetch},json(utf8s)]`;

/**
 * The environment id (a UUID from the edge's own map) and the method (a token: HAProxy refuses a method with a
 * quote or a backslash, and the line takes 64 bytes of it) need no escaping: two `json` conversions fewer a
 * request.
 */
const LOG_FORMAT = `%[sc2_inc_gpc0] %[var(proc.vc_log_epoch)] %Ts.%ms %[var(txn.vc_log_un)] {${[
  '"environment_id":"%[var(txn.env)]"',
  '"type":"request"',
  '"method":"%[var(txn.vc_log_m)]"',
  `"path":"${s('var(txn.vc_log_p)')}"`,
  '"status":%ST',
  '"bytes":%B',
  '"duration_ms":%Ta',
  `"client_address":"${s('var(txn.client)')}"`,
  `"user_agent":"${s('var(txn.vc_log_u)')}"`,
].join(',')}}`;

export function requestLogGlobal(): string[] {
  return ['set-var-fmt proc.vc_log_epoch "%pid-%[date(0,us)]"'];
}

export function requestLogSections(o: RequestLogFragment): string[] {
  return [
    `ring ${REQUEST_RING}`,
    '  description "the request log, read by the request log shipper"',
    '  format raw',
    `  maxlen ${MAX_LINE}`,
    `  size ${o.ringSize ?? 16 * 1024 * 1024}`,
    '  timeout connect 2s',
    '  timeout server 30s',
    `  server control-plane unix@${o.socket}`,
    '',
    `backend ${REQUEST_SEQUENCE_TABLE}`,
    '  stick-table type string len 40 size 100k expire 7d store gpc0',
    '',
  ];
}

export function requestLogFrontend(): string[] {
  return [`log ring@${REQUEST_RING} len ${MAX_LINE} format raw local0 info`, `log-format '${LOG_FORMAT}'`];
}

/**
 * The frontend's first `http-request` lines once `txn.env` and `txn.client` are set: what the line captures, and
 * the environment's sequence entry tracked in sc2 (unless `o.unless` holds: sc2 is then another fragment's).
 */
export function requestLogRules(o: { unless?: string } = {}): string[] {
  return [
    'http-request set-var(txn.vc_log_m) method,bytes(0,64)',
    'http-request set-var(txn.vc_log_p) path,bytes(0,2048)',
    'http-request set-var(txn.vc_log_u) req.fhdr(user-agent),bytes(0,512)',
    'http-request set-var(txn.vc_log_un) req.hdr_cnt(user-agent)',
    `http-request track-sc2 var(txn.env) table ${REQUEST_SEQUENCE_TABLE}${o.unless ? ` if !${o.unless}` : ''}`,
  ];
}
