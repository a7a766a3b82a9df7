export const API_PREFIX = '/api/vc/v1';

/** `/teams/{id}` -> `/teams/:id` for the router. */
export function toRouterPath(path: string): string {
  return path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
}
