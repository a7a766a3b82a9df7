/** Timestamps as the API shows them: ISO 8601 in UTC. */
export function iso(d: Date | string): string {
  return new Date(d).toISOString();
}

/** The same for a column that may be empty. */
export function isoOrNull(d: Date | string | null | undefined): string | null {
  return d ? new Date(d).toISOString() : null;
}
