/**
 * A URL as answers show it when it may carry a credential (a log destination, a webhook): no userinfo, no
 * fragment, every query value replaced by "redacted". The URL itself is kept sealed.
 */
export function displayUrl(raw: string): string {
  const u = new URL(raw);
  u.username = '';
  u.password = '';
  u.hash = '';
  for (const key of [...new Set(u.searchParams.keys())]) u.searchParams.set(key, 'redacted');
  return u.toString();
}
