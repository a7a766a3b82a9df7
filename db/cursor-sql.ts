/** SQL expression giving a timestamptz column as the exact text a time cursor carries (api/lib/pagination.ts). */
export const cursorTimeSql = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
