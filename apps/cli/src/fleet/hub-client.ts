/**
 * A small typed client for the hub's people-facing REST API, used by the CLI's hub-backed commands,
 * the demo and the end-to-end tests.
 */
export interface TargetView {
  name: string;
  cluster: string;
  appSet: string;
  namespace: string;
  desiredRevision: string | null;
  bundleDigest: string | null;
  syncStatus: string;
  health: string | null;
  healthMessage?: string | null;
  lastSyncedRevision?: string | null;
  lastSyncedAt?: string | null;
}

export interface RegisteredCluster {
  cluster: { id: string; name: string };
  bootstrapToken: string;
  expiresAt: string;
}

export class HubApiError extends Error {
  override readonly name = 'HubApiError';
  constructor(
    readonly status: number,
    readonly body: unknown,
    method: string,
    path: string,
  ) {
    super(
      `${method} ${path} → ${status}: ${typeof body === 'object' && body && 'message' in body ? String(body.message) : JSON.stringify(body)}`,
    );
  }
}

export class HubClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.token) headers['authorization'] = `Bearer ${this.token}`;
    const res = await fetch(new URL(path, this.baseUrl), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const parsed: unknown = text ? safeJson(text) : undefined;
    if (!res.ok) throw new HubApiError(res.status, parsed, method, path);
    return parsed as T;
  }

  registerCluster(name: string, labels: Record<string, string> = {}): Promise<RegisteredCluster> {
    return this.request('POST', '/api/v1/clusters', { name, labels });
  }

  createAppSet(doc: unknown): Promise<unknown> {
    return this.request('POST', '/api/v1/appsets', doc);
  }

  async targets(query: { cluster?: string; appSet?: string } = {}): Promise<TargetView[]> {
    const qs = new URLSearchParams(
      Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined),
    );
    const body = await this.request<TargetView[] | { items: TargetView[] }>(
      'GET',
      `/api/v1/targets${qs.size ? `?${qs.toString()}` : ''}`,
    );
    return Array.isArray(body) ? body : body.items;
  }

  async repositories(): Promise<{ id: string; url: string }[]> {
    const body = await this.request<{ id: string; url: string }[] | { items: { id: string; url: string }[] }>(
      'GET',
      '/api/v1/repositories',
    );
    return Array.isArray(body) ? body : body.items;
  }

  refreshRepository(id: string): Promise<unknown> {
    return this.request('POST', `/api/v1/repositories/${encodeURIComponent(id)}/refresh`);
  }

  async ready(): Promise<boolean> {
    try {
      const res = await fetch(new URL('/readyz', this.baseUrl));
      return res.ok;
    } catch {
      return false;
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
