import type { SessionView } from '@flotilla/contract';

/**
 * The console's only way in: the hub's public REST API on this origin, with the person's bearer
 * token. The token lives in sessionStorage: it is gone when the tab closes, and never in a cookie,
 * so no other site can make the browser use it.
 */
const TOKEN_KEY = 'flotilla.token';

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** An error the hub answered with: its status, its code and its message (which names the field). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The input field at fault, as the hub names it (`spec.generators[0].clusters`). */
    readonly path?: string,
  ) {
    super(message);
  }
}

export function authHeaders(): Record<string, string> {
  const token = storedToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

export type QueryParams = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, params: QueryParams = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function failure(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  const b = (body ?? {}) as { code?: unknown; message?: unknown; path?: unknown };
  const message =
    typeof b.message === 'string'
      ? b.message
      : Array.isArray(b.message)
        ? b.message.join('; ')
        : `${res.status} ${res.statusText}`;
  return new ApiError(
    res.status,
    typeof b.code === 'string' ? b.code : `http-${res.status}`,
    message,
    typeof b.path === 'string' ? b.path : undefined,
  );
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: {
      Accept: 'application/json',
      ...authHeaders(),
      ...(body !== undefined && { 'Content-Type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const get = <T>(path: string, params?: QueryParams) => api<T>('GET', withQuery(path, params));

/** Downloads a hub export (audit CSV/NDJSON) with the token: a plain link could not send it. */
export async function download(path: string, params: QueryParams, filename: string): Promise<void> {
  const res = await fetch(withQuery(path, params), { headers: authHeaders() });
  if (!res.ok) throw await failure(res);
  saveBlob(await res.blob(), filename);
}

function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const ROLE_RANK: Record<SessionView['role'], number> = { viewer: 0, operator: 1, admin: 2 };

/** Whether a role may do what `needed` may: the console hides controls, the hub refuses anyway. */
export function roleAllows(role: SessionView['role'], needed: SessionView['role']): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[needed];
}
