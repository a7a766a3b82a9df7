import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Me } from './api/types';

export interface SessionState {
  /** The signed-in account; undefined while GET /me is on its way. */
  me: Me | undefined;
  /** Load GET /me again (after signing in or out). */
  refresh(): Promise<void>;
}

export const SessionContext = createContext<SessionState | undefined>(undefined);

export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in page');
  return s;
}
