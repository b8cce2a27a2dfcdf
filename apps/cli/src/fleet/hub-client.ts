/**
 * A small typed client for the hub's people-facing REST API, used by the CLI's hub-backed commands,
 * the demo and the end-to-end tests.
 */
import {
  LISTING_PAGE,
  type AppSetView,
  type ClusterView,
  type RegisteredClusterView,
  type SyncRunPageView,
  type SyncRunView,
  type TargetDiffView,
  type TargetListItemView,
} from '@flotilla/contract';

/** The hub's answers, as the contract defines them (the hub builds them with the same types). */
export type { AppSetView, ClusterView, SyncRunView };
export type TargetView = TargetListItemView;
export type RegisteredCluster = RegisteredClusterView;
export type SyncRunPage = SyncRunPageView;

export class HubApiError extends Error {
  override readonly name = 'HubApiError';
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly method: string,
    readonly path: string,
    /** The full URL asked for, so a message can say which hub answered. */
    readonly url: string = path,
  ) {
    super(
      `${method} ${path} → ${status}: ${typeof body === 'object' && body && 'message' in body ? String(body.message) : JSON.stringify(body)}`,
    );
  }

  /** The hub's `ApiError.code` (`not-found`, `invalid-appset`, …), when the body is an ApiError. */
  get code(): string | undefined {
    const b = this.body;
    return typeof b === 'object' && b !== null && 'code' in b && typeof b.code === 'string'
      ? b.code
      : undefined;
  }

  /** The hub's own message, or the raw body when it sent something else. */
  get hubMessage(): string {
    const b = this.body;
    if (typeof b === 'object' && b !== null && 'message' in b) return String(b.message);
    return typeof b === 'string' ? b : JSON.stringify(b ?? null);
  }

  /** The hub's id of the request (its `X-Request-Id`), to find it in the hub's log. */
  get requestId(): string | undefined {
    const b = this.body;
    return typeof b === 'object' && b !== null && 'requestId' in b && typeof b.requestId === 'string'
      ? b.requestId
      : undefined;
  }

  /** The offending input's path (`spec.generators[0]`), when the hub named one. */
  get inputPath(): string | undefined {
    const b = this.body;
    return typeof b === 'object' && b !== null && 'path' in b && typeof b.path === 'string'
      ? b.path
      : undefined;
  }
}

/** No HTTP answer at all: connection refused, DNS failure, reset. */
export class HubUnreachableError extends Error {
  override readonly name = 'HubUnreachableError';
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`cannot reach the hub at ${url}: ${describeNetworkError(cause)}`, { cause });
  }
}

function describeNetworkError(err: unknown): string {
  // undici reports every network failure as "fetch failed"; the useful part is the cause's code.
  const cause = err instanceof Error ? err.cause : undefined;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code && !cause.message.includes(code) ? `${code}: ${cause.message}` : cause.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export interface SyncRunQuery {
  target?: string;
  cluster?: string;
  appSet?: string;
  /** Comma-separated outcomes (Succeeded, Failed, Partial, Blocked). */
  outcome?: string;
  /** Comma-separated triggers (auto, manual, self-heal, rollback). */
  trigger?: string;
  /** RFC 3339; `from` inclusive, `to` exclusive, on the run's start. */
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

export class HubClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await this.send<T>(method, path, body)).body;
  }

  /** A download (an NDJSON archive): the body as text; an error answer throws as `request` does. */
  async text(path: string): Promise<string> {
    const headers: Record<string, string> = {};
    if (this.token) headers['authorization'] = `Bearer ${this.token}`;
    const url = new URL(path, this.baseUrl);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { headers });
      text = await res.text();
    } catch (err) {
      throw new HubUnreachableError(this.baseUrl, err);
    }
    if (!res.ok)
      throw new HubApiError(res.status, text ? safeJson(text) : undefined, 'GET', path, url.toString());
    return text;
  }

  /** Like `request`, also returning the HTTP status (the hub says created/replaced with 201/200). */
  async send<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.token) headers['authorization'] = `Bearer ${this.token}`;
    const url = new URL(path, this.baseUrl);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      text = await res.text();
    } catch (err) {
      throw new HubUnreachableError(this.baseUrl, err);
    }
    const parsed: unknown = text ? safeJson(text) : undefined;
    if (!res.ok) throw new HubApiError(res.status, parsed, method, path, url.toString());
    return { status: res.status, body: parsed as T };
  }

  registerCluster(
    name: string,
    labels: Record<string, string> = {},
    extra: { server?: string } = {},
  ): Promise<RegisteredCluster> {
    return this.request('POST', '/api/v1/clusters', { name, labels, ...extra });
  }

  clusters(): Promise<ClusterView[]> {
    return this.everyPage('/api/v1/clusters');
  }

  /**
   * Every item of a paged listing, following `nextCursor` a page of 500 at a time. A hub from before
   * listings were paged answers the whole array to the first request, which is taken as it is.
   */
  async everyPage<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const body = await this.request<T[] | { items: T[]; nextCursor: string | null }>(
        'GET',
        `${path}${queryString({ ...query, limit: LISTING_PAGE.max, cursor })}`,
      );
      if (Array.isArray(body)) return body;
      items.push(...body.items);
      if (!body.nextCursor) return items;
      cursor = body.nextCursor;
    }
  }

  cluster(name: string): Promise<ClusterView> {
    return this.request('GET', `/api/v1/clusters/${encodeURIComponent(name)}`);
  }

  /** A new single-use bootstrap token for a cluster already in the inventory (re-registration). */
  issueBootstrapToken(name: string): Promise<RegisteredCluster> {
    return this.request('POST', `/api/v1/clusters/${encodeURIComponent(name)}/bootstrap-tokens`);
  }

  /** The agent's credential stops working at once; the cluster stays in the inventory. */
  revokeCredential(name: string): Promise<ClusterView> {
    return this.request('POST', `/api/v1/clusters/${encodeURIComponent(name)}/revoke-credential`);
  }

  appSets(): Promise<AppSetView[]> {
    return this.everyPage('/api/v1/appsets');
  }

  appSet(name: string): Promise<AppSetView> {
    return this.request('GET', `/api/v1/appsets/${encodeURIComponent(name)}`);
  }

  /** Creates or replaces an ApplicationSet; `created` is false when one of that name was replaced. */
  async applyAppSet(doc: unknown): Promise<{ created: boolean; appSet: AppSetView }> {
    const res = await this.send<AppSetView>('POST', '/api/v1/appsets', doc);
    return { created: res.status === 201, appSet: res.body };
  }

  async deleteAppSet(name: string): Promise<void> {
    await this.request('DELETE', `/api/v1/appsets/${encodeURIComponent(name)}`);
  }

  /** One page of sync runs, newest first; pass `nextCursor` back as `cursor` for the next. */
  syncRuns(query: SyncRunQuery = {}): Promise<SyncRunPage> {
    return this.request('GET', `/api/v1/sync-runs${queryString(query)}`);
  }

  createAppSet(doc: unknown): Promise<unknown> {
    return this.request('POST', '/api/v1/appsets', doc);
  }

  targets(query: { cluster?: string; appSet?: string } = {}): Promise<TargetView[]> {
    return this.everyPage('/api/v1/targets', query);
  }

  /** What a sync would change on the target's cluster, from its agent's latest comparison. */
  targetDiff(name: string): Promise<TargetDiffView> {
    return this.request('GET', `/api/v1/targets/${encodeURIComponent(name)}/diff`);
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

function queryString(query: object): string {
  const qs = new URLSearchParams();
  for (const [key, value] of Object.entries(query) as [string, string | number | undefined][])
    if (value !== undefined) qs.set(key, String(value));
  return qs.size ? `?${qs.toString()}` : '';
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
