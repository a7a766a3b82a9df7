/**
 * Strong entity tags for list answers, and the If-None-Match check (RFC 9110 13.1.2: weak comparison,
 * a list of tags or `*`). A matching conditional GET answers 304 with no body; the ETag is sent either way.
 */
import { createHash } from 'node:crypto';
import type { Context } from 'koa';

/** A strong tag: the quoted sha256 (base64url, 27 characters) of the given parts, in order. */
export function strongEtag(parts: Array<string | number | null | undefined>): string {
  const hash = createHash('sha256');
  for (const p of parts) hash.update(p === null || p === undefined ? '\u0000' : String(p)).update('\u001f');
  return `"${hash.digest('base64url').slice(0, 27)}"`;
}

const opaque = (tag: string) => tag.trim().replace(/^W\//, '');

/** True when the request's If-None-Match names `etag` (or is `*`). */
function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const want = opaque(etag);
  return header.split(',').some((t) => opaque(t) === want);
}

/**
 * Sets ETag and answers 304 with no body when the request already holds this version; otherwise sets
 * the body. Returns true when it answered 304.
 */
export function sendWithEtag(ctx: Context, etag: string, body: unknown): boolean {
  ctx.set('ETag', etag);
  ctx.set('Cache-Control', 'private, no-cache');
  if (ifNoneMatch(ctx.get('if-none-match') || undefined, etag)) {
    ctx.status = 304;
    ctx.body = null;
    return true;
  }
  ctx.status = 200;
  ctx.body = body;
  return false;
}
