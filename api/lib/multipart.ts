/**
 * Formidable (koa-body) hands a request's files over as each one is written to disk, not in the order they
 * were sent: a small part may finish before a larger one sent first. Each file is stamped when its part
 * begins (a count across this process, so within one request it follows the parts' order), and a route that
 * keeps the order sent (a ticket's screenshots) sorts by it.
 */
const ORDER = 'vcPartOrder';
let begun = 0;

/** koa-body's `formidable.onFileBegin`. */
export function stampPartOrder(_field: string, file: object): void {
  (file as Record<string, unknown>)[ORDER] = begun++;
}

/** The files in the order their parts came in the request. */
export function inPartOrder<T extends object>(files: T[]): T[] {
  const order = (f: T) => Number((f as Record<string, unknown>)[ORDER] ?? 0);
  return [...files].sort((a, b) => order(a) - order(b));
}
