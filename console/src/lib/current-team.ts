const KEY = 'vc-console-team';

/** The team last opened in this browser (the bell follows it). */
export function currentTeamId(): string | undefined {
  try {
    return localStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function rememberTeam(id: string) {
  try {
    localStorage.setItem(KEY, id);
  } catch {}
}
