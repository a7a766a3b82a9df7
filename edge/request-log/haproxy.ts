/**
 * The request log on HAProxy 2.6 (CONTRACT "Logs", docs/edge-password-and-logs.md): the configuration lines.
 *
 * HAProxy writes one JSON line per request (every request of an environment: refused ones, upgrades, the
 * app's answers) into the ring `vc_requests`, which forwards it to the control plane's unix socket
 * (reader.ts). While the control plane is down the lines wait in the ring (its `size`) and are sent when it
 * listens again; what overflows is lost, and the reader counts it from the per-environment sequence number.
 *
 * Contract with the frontend:
 * - `txn.env` (environment id) and `txn.client` (client address after TRUST_PROXY_HOPS) are set first, then
 *   `requestLogRules()` come before any rule that may refuse or answer (deny, return, redirect, 401/403/429/
 *   503): what they capture (method, path, user agent) is what a refused request is logged with;
 * - `requestLogFrontend()` goes into the frontend (its `log` and `log-format` lines);
 * - `requestLogGlobal()` goes into the global section; `requestLogSections()` adds the ring `vc_requests` and
 *   the backend `vc_log_seq` (a stick table, never shared with `peers`);
 * - sticky counter 1 (`sc1`) is this fragment's: it tracks the environment for the sequence number.
 *
 * The line (fields are short names; the reader turns them into CONTRACT's): `q` sequence number of the
 * environment in this HAProxy process (taken when the line is written), `e` the process's epoch (a new one at
 * every start and reload), `t` accept time `seconds.ms`, `env`, `m` method, `p` path without the query
 * (at most 2048 bytes), `s` status, `b` bytes sent to the client (headers included), `d` active time in ms,
 * `a` client address, `u` user agent (at most 512 bytes) and `un` how many User-Agent headers there were.
 * Strings go through the `json(utf8s)` converter: quotes, backslashes and control characters are escaped
 * and invalid UTF-8 is dropped, so every line is valid JSON.
 */

export const REQUEST_RING = 'vc_requests';
export const LOG_SEQ_TABLE = 'vc_log_seq';

export interface RequestLogFragment {
  /** The control plane's unix stream socket (RequestLogReader listens there). */
  socket: string;
  /** The ring's size in bytes: what waits while the control plane is down (default 4 MiB, ~15,000 lines). */
  ringSize?: number;
}

/** The longest line: 2048 path bytes and 512 user-agent bytes, escaped at most 6 to 1, fit well within. */
export const MAX_LINE = 32_768;

const s = (fetch: string) => `%[${fetch},json(utf8s)]`;

export const LOG_FORMAT = `{${[
  `"q":"%[sc_inc_gpc0(1)]"`,
  `"e":"%[var(proc.vc_log_epoch)]"`,
  `"t":"%Ts.%ms"`,
  `"env":"${s('var(txn.env)')}"`,
  `"m":"${s('var(txn.vc_log_m)')}"`,
  `"p":"${s('var(txn.vc_log_p)')}"`,
  '"s":%ST',
  '"b":%B',
  '"d":%Ta',
  `"a":"${s('var(txn.client)')}"`,
  `"u":"${s('var(txn.vc_log_u)')}"`,
  `"un":"%[var(txn.vc_log_un)]"`,
].join(',')}}`;

export function requestLogGlobal(): string[] {
  return ['set-var-fmt proc.vc_log_epoch "%pid-%[date(0,us)]"'];
}

export function requestLogSections(o: RequestLogFragment): string[] {
  return [
    `ring ${REQUEST_RING}`,
    '  description "the request log, read by the edge control plane"',
    '  format raw',
    `  maxlen ${MAX_LINE}`,
    `  size ${o.ringSize ?? 4 * 1024 * 1024}`,
    '  timeout connect 2s',
    '  timeout server 30s',
    `  server control-plane unix@${o.socket}`,
    '',
    `backend ${LOG_SEQ_TABLE}`,
    '  stick-table type string len 64 size 200k expire 7d store gpc0',
    '',
  ];
}

export function requestLogFrontend(): string[] {
  return [`log ring@${REQUEST_RING} len ${MAX_LINE} format raw local0 info`, `log-format '${LOG_FORMAT}'`];
}

/** The frontend's first `http-request` lines once `txn.env` and `txn.client` are set. */
export function requestLogRules(): string[] {
  return [
    `http-request track-sc1 var(txn.env) table ${LOG_SEQ_TABLE} if { var(txn.env) -m found }`,
    'http-request set-var(txn.vc_log_m) method',
    'http-request set-var(txn.vc_log_p) path,bytes(0,2048)',
    'http-request set-var(txn.vc_log_u) req.fhdr(user-agent),bytes(0,512)',
    'http-request set-var(txn.vc_log_un) req.hdr_cnt(user-agent)',
  ];
}
