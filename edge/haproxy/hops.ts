/**
 * The loopback hops of the frontend (config.ts): a request that HAProxy cannot serve in one pass goes through a
 * backend whose server is HAProxy's own loopback listener `fe_origin` (which serves the environment's backend,
 * `p<port>`, with no rule run again) or the CDN tier (Varnish, which fetches its misses from `fe_origin`):
 * - `be_gz`: a project that compresses (HAProxy 2.6's compression cannot be switched per request);
 * - `be_cdn`, `be_cdn_gz`: GET and HEAD of an environment with the CDN on;
 * - `be_err`: an environment whose project has an error page, and none of the above.
 *
 * The error page (pages.ts): HAProxy's own 502, 503 and 504 (`http-error`, config.ts) carry the marker header
 * `x-vc-edge-error`; `http-response` rules see only what a server answered, so on the hop's backend HAProxy's
 * own answer of the inner pass is one, and is replaced there with the project's page (`error-page.map`: `r`,
 * the action `vc_error_page`; `s`, a page larger than one reply, through the `_s` twin of each hop with the
 * filter `vc_error_page_stream`). The frontend removes the marker from every answer it sends. Only the
 * environments of projects with an error page take a hop for it; every other request keeps its path.
 */

const TEXT_TYPES = [
  'text/',
  'application/json',
  'application/javascript',
  'application/xml',
  'application/xhtml+xml',
  'application/rss+xml',
  'application/atom+xml',
  'application/ld+json',
  'image/svg+xml',
];

/**
 * A request the app may have acted on is never sent to it twice: the L7 retry (`retry-on ... empty-response`)
 * is for GET, HEAD and OPTIONS only. A POST, PUT, PATCH or DELETE whose connection closed without an answer gets
 * the 502 (a connection that failed before the request was sent is still tried again: `conn-failure`). Each
 * frontend a request passes has it (fe_edge, config.ts, and fe_origin behind a hop, here).
 */
export const NOT_RETRIED = '  http-request disable-l7-retry if !METH_GET !METH_HEAD !METH_OPTIONS';

/** HAProxy's own errors, as `http-error` marks them. */
export const EDGE_ERROR = 'x-vc-edge-error';
const MARKED = `{ res.hdr(${EDGE_ERROR}) -m found }`;
const STREAMED = '{ var(txn.ep) -m str s }';
/**
 * A hop to fe_origin waits longer than fe_origin's backend (`timeout server` 600s in defaults), so that the
 * inner pass's 504 (marked) is the answer, not the hop's own.
 */
const HOP_TIMEOUT = '610s';

/** The frontend's `http-request` lines that say which hop a request takes (after txn.env, txn.cdn, txn.gz). */
export function hopVariables(map: (name: string) => string): string[] {
  return [`  http-request set-var(txn.ep) var(txn.env),map(${map('error-page')})`];
}

/** The frontend's `use_backend` lines of the hops (before the environment's own backend). */
export function hopRoutes(): string[] {
  const cdn = '{ var(txn.cdn) -m found }';
  const gz = '{ var(txn.gz) -m found }';
  return [
    `  use_backend be_cdn_gz_s if ${cdn} ${gz} ${STREAMED}`,
    `  use_backend be_cdn_gz if ${cdn} ${gz}`,
    `  use_backend be_cdn_s if ${cdn} ${STREAMED}`,
    `  use_backend be_cdn if ${cdn}`,
    // a project that compresses: through be_gz (gzip) to fe_origin, which serves the environment's backend
    `  use_backend be_gz_s if ${gz} ${STREAMED}`,
    `  use_backend be_gz if ${gz}`,
    `  use_backend be_err_s if ${STREAMED}`,
    '  use_backend be_err if { var(txn.ep) -m found }',
  ];
}

/** What a hop's backend adds for the error page: the action (`shared`: not every request has a page), or the filter. */
function errorPage(kind: 'reply' | 'shared' | 'stream'): string[] {
  if (kind === 'stream')
    return ['  filter lua.vc_error_page_stream', `  http-response set-var(txn.edge_error) bool(true) if ${MARKED}`];
  return [`  http-response lua.vc_error_page if ${kind === 'shared' ? '{ var(txn.ep) -m found } ' : ''}${MARKED}`];
}

/** gzip: with the filter, the compression filter is named after it (HAProxy compresses no error anyway). */
const gzip = (stream: boolean) => [
  ...(stream ? ['  filter compression'] : []),
  '  compression algo gzip',
  `  compression type ${TEXT_TYPES.join(' ')}`,
];

/** fe_origin and the hops' backends. `map`: a map file's path by name. */
export function hopSections(o: { port: number; originPort: number }, map: (name: string) => string): string[] {
  const origin = [
    `  timeout server ${HOP_TIMEOUT}`,
    '  http-request set-header X-VC-Env "%[var(txn.env)]"',
    `  server origin 127.0.0.1:${o.originPort}`,
  ];
  const cdn = `  server cdn 127.0.0.1:${o.port}`;
  const backend = (name: string, ...lines: string[]) => [`backend ${name}`, ...lines, ''];
  return [
    'frontend fe_origin',
    `  bind 127.0.0.1:${o.originPort} name origin`,
    // only the CDN tier and the hops reach this loopback listener: they say which environment, and no rule
    // runs again (no request line is logged here: the frontend that took the request logs it)
    '  http-request set-var(txn.env) req.hdr(x-vc-env)',
    NOT_RETRIED,
    // an app's answer never carries the marker (http-response rules see servers' answers only, never HAProxy's
    // own errors): a forged one would have the hop replace the app's own answer with the error page
    `  http-response del-header ${EDGE_ERROR}`,
    `  http-request set-var(txn.unavail) var(txn.env),map(${map('unavailable')})`,
    `  http-request set-var(txn.sticky) var(txn.env),map(${map('sticky')})`,
    '  http-request del-header X-VC-Env',
    '  http-request del-header X-VC-Default-TTL',
    `  use_backend p%[var(txn.env),map(${map('env-port')})]`,
    '  default_backend be_none',
    '',
    ...backend('be_gz', ...gzip(false), ...errorPage('shared'), ...origin),
    ...backend('be_gz_s', ...errorPage('stream'), ...gzip(true), ...origin),
    ...backend('be_err', ...errorPage('reply'), ...origin),
    ...backend('be_err_s', ...errorPage('stream'), ...origin),
    ...backend('be_cdn', ...errorPage('shared'), cdn),
    ...backend('be_cdn_s', ...errorPage('stream'), cdn),
    ...backend('be_cdn_gz', ...gzip(false), ...errorPage('shared'), cdn),
    ...backend('be_cdn_gz_s', ...errorPage('stream'), ...gzip(true), cdn),
  ];
}
