/**
 * HAProxy's buffer (`tune.bufsize`): 16 KiB, HAProxy's own default. A request's line and headers must fit it,
 * less the 1 KiB HAProxy keeps for rewrites: up to ~15 KiB (a larger one gets HAProxy's 400). Node's HTTP server,
 * which most tenants run, refuses more than 16 KiB of headers by default (431), so a larger buffer let through
 * little that an app would take.
 *
 * Not larger: every request pays for the buffer's size. The L7 retry (`retry-on`, config.ts) copies one whole
 * buffer per request, and the rest of HAProxy's work touches more memory with a larger one. In
 * `npm run bench -- edge-variants` (docs/benchmarks.md "The edge's buffer"), 32 KiB cost HAProxy 5.5-6.2 µs a
 * request more than 16 KiB, of 24-30 µs; 128 KiB about twice the CPU.
 *
 * What else a buffer bounds, each sized from this: an error page HAProxy answers in one reply (pages.ts,
 * REPLY_MAX_BYTES; a larger one is streamed), a runtime API command with its payload (runtime.ts), and a request
 * log line, which the ring's forwarder sends from one buffer (logs/request-reader.ts MAX_LINE).
 */
export const BUFSIZE = 16_384;

/** What a runtime API command and its payload may take of one buffer (the rest: the command's own framing). */
export const RUNTIME_PAYLOAD_MAX = BUFSIZE - 4096;
