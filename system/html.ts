// HTML escaping, the one copy: e-mails, the edge's pages and rules, the API's few pages and the console's shell.

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** `value` as text inside HTML, element content or a quoted attribute; null and undefined as ''. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch]);
}
