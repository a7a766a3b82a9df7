/**
 * Limits of what the edge answers with on its own (CONTRACT "The edge"): a project's maintenance and error
 * pages, and the maintenance note shown where a maintenance page has `{{note}}`. The API refuses more; the
 * edge serves them from a map through Lua (edge/haproxy/pages.ts).
 */

/** A project's maintenance or error page, in characters. */
export const MAX_EDGE_PAGE = 100_000;

/** The maintenance note, in characters. */
export const MAX_MAINTENANCE_NOTE = 2000;

/**
 * The most bytes one `{{note}}` becomes on a page: the note escaped for HTML (`"` -> `&quot;`: 6 bytes for one
 * character; no UTF-16 unit takes more than 3 bytes of UTF-8).
 */
const MAX_NOTE_BYTES = MAX_MAINTENANCE_NOTE * 6;

/**
 * The most bytes a page may take served (what HAProxy's largest buffer, 128 KiB, held with room for the answer's
 * headers, when pages were files HAProxy read). The API refuses a page past it; the edge does not serve one
 * stored before that check (edge/haproxy/model.ts): each page the edge holds is in its pages.map, which every
 * change of a page replaces whole through the runtime API.
 */
export const MAX_SERVED_PAGE_BYTES = 131_072 - 1024;

/** The most bytes a maintenance page takes served: its text, and the longest note at each `{{note}}`. */
export function maintenancePageBytes(page: string): number {
  const parts = page.split('{{note}}');
  return Buffer.byteLength(parts.join('')) + (parts.length - 1) * MAX_NOTE_BYTES;
}
