/**
 * Every test file's `fetch` sends a GET or HEAD again, once, when the connection it went on was closed before
 * any answer came (`UND_ERR_SOCKET`), as RFC 9112 9.3.1 lets a client do and browsers and curl do. Node's
 * fetch does not, and the edge's HAProxy closes idle kept-alive client connections when it reloads (a new
 * environment anywhere reloads it: docs/edge.md), so a test's next GET on such a connection would fail for
 * a reason no tenant's browser sees. Anything else (another method, another error, a second failure) is
 * the test's to see.
 */
// A vitest worker that runs several files in one process (isolate: false) runs this file before each: wrap once.
const RESENDS = Symbol.for('vc.fetch-resend');
const send: typeof fetch =
  (globalThis.fetch as typeof fetch & { [RESENDS]?: typeof fetch })[RESENDS] ?? globalThis.fetch;

function methodOf(input: Parameters<typeof fetch>[0], init?: RequestInit): string {
  if (init?.method) return init.method.toUpperCase();
  return input instanceof Request ? input.method.toUpperCase() : 'GET';
}

const resending: typeof fetch = async (input, init) => {
  try {
    return await send(input, init);
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    const method = methodOf(input, init);
    if (code !== 'UND_ERR_SOCKET' || (method !== 'GET' && method !== 'HEAD') || init?.signal?.aborted) throw err;
    return send(input, init);
  }
};
(resending as typeof fetch & { [RESENDS]?: typeof fetch })[RESENDS] = send;
globalThis.fetch = resending;
