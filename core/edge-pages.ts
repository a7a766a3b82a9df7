/**
 * Limits of what the edge answers with on its own (CONTRACT "The edge"): a project's maintenance and error
 * pages, and the maintenance note shown where a maintenance page has `{{note}}`. The API refuses more; the
 * edge sizes HAProxy's buffers for them (edge/haproxy/config.ts).
 */

/** A project's maintenance or error page, in characters. */
export const MAX_EDGE_PAGE = 100_000;

/** The maintenance note, in characters. */
export const MAX_MAINTENANCE_NOTE = 2000;

/**
 * The most bytes one `{{note}}` becomes on a page: the note escaped for HTML (`"` -> `&quot;`: 6 bytes for one
 * character; no UTF-16 unit takes more than 3 bytes of UTF-8).
 */
export const MAX_NOTE_BYTES = MAX_MAINTENANCE_NOTE * 6;
