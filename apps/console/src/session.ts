import type { SessionView } from '@flotilla/contract';
import { createContext, useContext } from 'react';
import { roleAllows } from './api.js';

export const SessionContext = createContext<SessionView | null>(null);

/** Whether the signed-in role may use a control (the hub enforces it regardless). */
export function useCan(needed: SessionView['role']): boolean {
  const session = useContext(SessionContext);
  return session !== null && roleAllows(session.role, needed);
}
