import { api, ok } from '../api/client';
import type { Answer } from '../api/types';

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

type Teams = Answer<'listTeams'>;
let reading: Promise<Teams> | undefined;

/** GET /teams, one read shared by whoever asks while it is in flight (the bell and a page's breadcrumb). */
export function readTeams(): Promise<Teams> {
  if (reading) return reading;
  const mine: Promise<Teams> = ok(api.GET('/teams')).finally(() => {
    if (reading === mine) reading = undefined;
  });
  reading = mine;
  return mine;
}
