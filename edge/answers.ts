/** The edge's own answers (plain text, the maintenance page) and what it reads off a request. */
import type http from 'node:http';

export const MAINTENANCE_RETRY_SECONDS = 300;
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
