/**
 * The projects' rate limit in HAProxy (config.ts): the window is a map value, not a table of its own, so a new
 * window is a runtime change (issue 28 item 5).
 */

/**
 * The rate limit's tables, by window length (an entry lasts two windows of the longest it holds): `[name,
 * longest window in seconds]`.
 */
const RATE_TABLES: [string, number][] = [
  ['rl_short', 60],
  ['rl_mid', 3600],
  ['rl_long', 86_400],
];

/**
 * The rate limit without a table per window: requests per `<project>|<client>` in the project's window of
 * `txn.rl` seconds, HAProxy's own sliding estimate (the current window's count, plus the previous window's
 * for the part of it still within the last `txn.rl` seconds). gpt(0): the window's number, gpc(0): its
 * count, gpt(1): the previous window's count.
 */
export function rateLimitRules(map: (name: string) => string, tooMany: string): string[] {
  const rl = 'if { var(txn.rl) -m found }';
  const track = RATE_TABLES.map(([table, longest], i) => {
    const shorter = i ? ` { var(txn.rl) -m int gt ${RATE_TABLES[i - 1][1]} }` : '';
    return `  http-request track-sc0 var(txn.rlkey) table ${table} ${rl} { var(txn.rl) -m int le ${longest} }${shorter}`;
  });
  return [
    `  http-request set-var(txn.rl) var(txn.p),map_str_int(${map('rate-period')})`,
    `  http-request set-var(txn.rlmax) var(txn.p),map_str_int(${map('rate-requests')}) ${rl}`,
    `  http-request set-var(txn.rlms) var(txn.rl),mul(1000) ${rl}`,
    `  http-request set-var(txn.rlkey) var(txn.p),concat(|,txn.client) ${rl}`,
    ...track,
    `  http-request set-var(txn.now) date(0,ms) ${rl}`,
    `  http-request set-var(txn.rlw) var(txn.now),div(txn.rlms) ${rl}`,
    // the windows since the stored one's (its number minus the stored number)
    `  http-request set-var(txn.rld) sc_get_gpt(0,0),neg,add(txn.rlw) ${rl}`,
    // a new window: the one just ended becomes the previous one (an older one counts nothing)
    `  http-request set-var(txn.rlc) sc_clr_gpc(0,0) ${rl} !{ var(txn.rld) -m int 0 }`,
    `  http-request sc-set-gpt(1,0) var(txn.rlc) ${rl} { var(txn.rld) -m int 1 }`,
    `  http-request sc-set-gpt(1,0) int(0) ${rl} { var(txn.rld) -m int gt 1 }`,
    `  http-request sc-set-gpt(0,0) var(txn.rlw) ${rl} !{ var(txn.rld) -m int 0 }`,
    // the window's count, counting this request (the fetch increments and answers the new value: one rule)
    `  http-request set-var(txn.rlcur) sc_inc_gpc(0,0) ${rl}`,
    `  http-request set-var(txn.rlrem) var(txn.now),mod(txn.rlms),neg,add(txn.rlms) ${rl}`,
    `  http-request set-var(txn.rlest) sc_get_gpt(1,0),mul(txn.rlrem),div(txn.rlms),add(txn.rlcur) ${rl}`,
    `  http-request return ${tooMany} hdr Retry-After "%[var(txn.rl)]" ${rl} { var(txn.rlest),sub(txn.rlmax) gt 0 }`,
  ];
}

/** The rate limit's tables (backend sections). */
export function rateLimitTables(): string[] {
  return RATE_TABLES.flatMap(([table, longest]) => [
    `backend ${table}`,
    `  stick-table type string len 96 size 1m expire ${2 * longest}s store gpt(2),gpc(1)`,
    '',
  ]);
}
