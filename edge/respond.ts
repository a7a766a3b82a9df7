/** How the edge writes answers: its own (plain text, maintenance) and the upstream's or the cache's. */
import type http from 'node:http';
import type { Readable } from 'node:stream';
import { compressorFor } from './rules';

const DEFAULT_MAINTENANCE_PAGE =
  '<!doctype html><html><head><meta charset="utf-8"><title>Down for maintenance</title></head>' +
  '<body><h1>Down for maintenance</h1><p>{{note}}</p></body></html>\n';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The project's maintenance page (or the default), `{{note}}` replaced by the note, escaped. */
export function maintenancePage(page: string | null, note: string | null): string {
  return (page ?? DEFAULT_MAINTENANCE_PAGE).replaceAll('{{note}}', escapeHtml(note ?? ''));
}

export function plain(
  res: http.ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(`${text}\n`);
}

export function hostOf(req: http.IncomingMessage): string {
  const raw = (req.headers.host ?? '').toLowerCase();
  return raw.startsWith('[') ? raw.slice(0, raw.indexOf(']') + 1) : raw.replace(/:\d+$/, '').replace(/\.$/, '');
}

export function hasBody(req: http.IncomingMessage): boolean {
  return Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
}

/** Headers without the named ones (a flat name, value list). */
function without(headers: string[], names: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2)
    if (!names.includes(headers[i].toLowerCase())) out.push(headers[i], headers[i + 1]);
  return out;
}

/**
 * Writes an upstream answer (a stream) or a cached one (a buffer) with the edge's `extra` headers,
 * compressing text when the project asks for it and the client accepts it.
 */
export function writeAnswer(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  answer: {
    status: number;
    statusMessage?: string;
    headers: string[];
    parsed: http.IncomingHttpHeaders;
    body: Readable | Buffer;
  },
  extra: string[],
  compression: boolean,
): void {
  const zip = compression ? compressorFor(req, answer.status, answer.parsed) : null;
  const buffered = Buffer.isBuffer(answer.body);
  let headers = answer.headers;
  if (zip) {
    headers = without(headers, ['content-length', 'vary']);
    const vary = answer.parsed.vary ? `${answer.parsed.vary}, Accept-Encoding` : 'Accept-Encoding';
    headers.push('content-encoding', zip.encoding, 'vary', vary);
  } else if (buffered) {
    headers = [...without(headers, ['content-length']), 'content-length', String((answer.body as Buffer).length)];
  }
  res.writeHead(answer.status, answer.statusMessage, extra.length ? [...headers, ...extra] : headers);
  if (buffered) {
    const body = answer.body as Buffer;
    if (req.method === 'HEAD') return void res.end();
    if (!zip) return void res.end(body);
    zip.stream.pipe(res);
    zip.stream.end(body);
    return;
  }
  const stream = answer.body as Readable;
  if (zip) stream.pipe(zip.stream).pipe(res);
  else stream.pipe(res);
}
