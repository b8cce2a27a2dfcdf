/**
 * Clean-ups to run if the runner stops this benchmark process (SIGTERM on overrun): without them a
 * killed child would leave the hub process, git daemon, database and temp dirs behind.
 */
const cleanups = new Set<() => Promise<void>>();

export function onStop(fn: () => Promise<void>): () => void {
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

export async function runCleanups(): Promise<void> {
  const all = [...cleanups].reverse();
  cleanups.clear();
  for (const fn of all) await fn().catch(() => undefined);
}
