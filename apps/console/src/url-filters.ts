import { useLocation, useSearch } from 'wouter';

/**
 * A view's filters and its page cursors, kept in the URL so a view can be shared, reloaded and
 * navigated with the back button. `page` holds the stack of keyset cursors that led to this page.
 */
export function useUrlFilters<K extends string>(
  path: string,
  keys: readonly K[],
): [Record<K, string>, string[], (f: Record<K, string>, cursors?: string[]) => void] {
  const search = new URLSearchParams(useSearch());
  const [, navigate] = useLocation();
  const filters = Object.fromEntries(keys.map((k) => [k, search.get(k) ?? ''])) as Record<K, string>;
  const cursors = search.getAll('page');
  const set = (f: Record<K, string>, next: string[] = []) => {
    const q = new URLSearchParams();
    for (const k of keys) if (f[k]) q.set(k, f[k]);
    for (const c of next) q.append('page', c);
    const s = q.toString();
    navigate(s ? `${path}?${s}` : path);
  };
  return [filters, cursors, set];
}

export function emptyFilters<K extends string>(keys: readonly K[]): Record<K, string> {
  return Object.fromEntries(keys.map((k) => [k, ''])) as Record<K, string>;
}

/** `from`/`to` are datetime-local inputs (the viewer's wall time); the API takes RFC 3339. */
export function withIsoTimes<F extends { from: string; to: string }>(
  f: F,
): Omit<F, 'from' | 'to'> & { from?: string; to?: string } {
  const iso = (v: string) => (v ? new Date(v).toISOString() : undefined);
  return { ...f, from: iso(f.from), to: iso(f.to) };
}
