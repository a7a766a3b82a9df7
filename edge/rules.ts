/** The edge's own answers' texts and header values, shared by the HAProxy configuration (edge/haproxy/). */
import { escapeHtml } from '../system/html';

export function hstsValue(h: { max_age: number; include_subdomains: boolean; preload: boolean }): string {
  return `max-age=${h.max_age}${h.include_subdomains ? '; includeSubDomains' : ''}${h.preload ? '; preload' : ''}`;
}

export const DEFAULT_MAINTENANCE_PAGE =
  '<!doctype html><html><head><meta charset="utf-8"><title>Down for maintenance</title></head>' +
  '<body><h1>Down for maintenance</h1><p>{{note}}</p></body></html>\n';

/** The project's maintenance page (or the default), `{{note}}` replaced by the note, escaped. */
export function maintenancePage(page: string | null, note: string | null): string {
  return (page ?? DEFAULT_MAINTENANCE_PAGE).replaceAll('{{note}}', escapeHtml(note ?? ''));
}
