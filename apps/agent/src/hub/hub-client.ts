import { fetch, type RequestInit, type Response } from 'undici';
import { z } from 'zod';
import {
  AGENT_API,
  AGENT_FEATURES,
  AGENT_FEATURES_HEADER,
  AGENT_VERSION_HEADER,
  type AgentFeature,
  AGENT_REFUSAL,
  BUNDLE_BATCH_MAX,
  CREDENTIAL_GONE_CODES,
  capabilitiesResponseSchema,
  type AssignmentsResponse,
  type Bundle,
  type CapabilitiesResponse,
  type ClusterCapabilities,
  type RegisterRequest,
  type RegisterResponse,
  type Report,
  type ReportBatchResponse,
  type RotateResponse,
  assignmentsResponseSchema,
  bundleBatchResponseSchema,
  bundleSchema,
  registerResponseSchema,
  reportBatchResponseSchema,
  rotateResponseSchema,
} from '@flotilla/contract';

/**
 * `hub-credential-gone` and `hub-reports-invalid` are the hub's own final answers (a code from
 * AGENT_REFUSAL); `hub-unauthorized` is any other 401/403, which a proxy in the way can send too.
 */
export type HubCallErrorCode =
  | 'hub-unreachable'
  | 'hub-unauthorized'
  | 'hub-credential-gone'
  | 'hub-rejected'
  | 'hub-reports-invalid'
  | 'hub-bad-response'
  | 'hub-server-error';

/** A failed call to the hub, with the endpoint it concerned. */
export class HubCallError extends Error {
  constructor(
    readonly code: HubCallErrorCode,
    readonly path: string,
    message: string,
    readonly status?: number,
    /** The `code` of the hub's error body, when the answer had one. */
    readonly apiCode?: string,
  ) {
    super(message);
    this.name = 'HubCallError';
  }

  /** Worth retrying later as it is (the hub is away or busy), as opposed to a request the hub refuses. */
  get transient(): boolean {
    return this.code === 'hub-unreachable' || this.code === 'hub-server-error';
  }
}

/** Which hub endpoint a call went to, as a bounded metrics label (paths carry digests). */
export type HubEndpoint = 'register' | 'rotate' | 'assignments' | 'bundles' | 'reports' | 'other';

/** Told of every hub call once it is answered or failed: `outcome` is `ok` or the HubCallError code. */
export type HubCallObserver = (endpoint: HubEndpoint, outcome: string, seconds: number) => void;

function endpointOf(path: string): HubEndpoint {
  if (path.startsWith(AGENT_API.register)) return 'register';
  if (path.startsWith(AGENT_API.rotate)) return 'rotate';
  if (path.startsWith(AGENT_API.assignments)) return 'assignments';
  if (path.startsWith(AGENT_API.reports)) return 'reports';
  if (path.startsWith(AGENT_API.bundleBatch) || path.startsWith(AGENT_API.bundle(''))) return 'bundles';
  return 'other';
}

export type AssignmentsPoll = { changed: false } | { changed: true; response: AssignmentsResponse };

/**
 * The agent's side of the pull protocol: plain `fetch`, every answer validated against the contract.
 * undici's `fetch`, the one the Kubernetes client already loads, not Node's global one: that is a
 * second copy of undici, compiled and kept on the heap (~4 MB of RSS) for the hub's calls alone.
 */
export class HubClient {
  constructor(
    private readonly baseUrl: string,
    private readonly agentVersion: string,
    private readonly observe?: HubCallObserver,
    /** What this agent announces it can do (all it knows; a test may play an older agent). */
    private readonly features: readonly AgentFeature[] = AGENT_FEATURES,
  ) {}

  async register(
    clusterName: string,
    bootstrapToken: string,
    signal?: AbortSignal,
  ): Promise<RegisterResponse> {
    const body: RegisterRequest = { clusterName, bootstrapToken, agentVersion: this.agentVersion };
    const res = await this.call(AGENT_API.register, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    return this.parse(AGENT_API.register, res, registerResponseSchema);
  }

  /** Trades `credential` for a new one; the hub keeps accepting the old one for a short grace period. */
  async rotate(credential: string, signal?: AbortSignal): Promise<RotateResponse> {
    const res = await this.call(AGENT_API.rotate, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}` },
      signal,
    });
    return this.parse(AGENT_API.rotate, res, rotateResponseSchema);
  }

  /** Tells the hub what the cluster serves; `changed` is false when it already knew. */
  async reportCapabilities(
    credential: string,
    capabilities: ClusterCapabilities,
    signal?: AbortSignal,
  ): Promise<CapabilitiesResponse> {
    const res = await this.call(AGENT_API.capabilities, {
      method: 'PUT',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify(capabilities),
      signal,
    });
    return this.parse(AGENT_API.capabilities, res, capabilitiesResponseSchema);
  }

  /** Long-polls: the hub answers 304 after `waitSeconds` when nothing changed since `etag`. */
  async assignments(
    credential: string,
    etag: string | undefined,
    waitSeconds: number,
    signal?: AbortSignal,
  ): Promise<AssignmentsPoll> {
    const path = `${AGENT_API.assignments}?wait=${waitSeconds}`;
    const headers: Record<string, string> = { authorization: `Bearer ${credential}` };
    if (etag !== undefined) headers['if-none-match'] = etag;
    const res = await this.call(path, { headers, signal });
    if (res.status === 304) return { changed: false };
    return { changed: true, response: await this.parse(path, res, assignmentsResponseSchema) };
  }

  async bundle(credential: string, digest: string, signal?: AbortSignal): Promise<Bundle> {
    const path = AGENT_API.bundle(digest);
    const res = await this.call(path, { headers: { authorization: `Bearer ${credential}` }, signal });
    return this.parse(path, res, bundleSchema);
  }

  /**
   * The bundles of `digests` in as few requests as the hub allows (BUNDLE_BATCH_MAX digests each, one
   * after another). `refused` lists what the hub would not give (not assigned to this cluster any
   * more, usually: poll again). A hub without the batch endpoint is asked one digest at a time.
   * The caller verifies every bundle against its digest.
   */
  async bundles(
    credential: string,
    digests: readonly string[],
    signal?: AbortSignal,
  ): Promise<{ bundles: Bundle[]; refused: string[] }> {
    const unique = [...new Set(digests)];
    const out = { bundles: [] as Bundle[], refused: [] as string[] };
    for (let i = 0; i < unique.length; i += BUNDLE_BATCH_MAX) {
      const chunk = unique.slice(i, i + BUNDLE_BATCH_MAX);
      let res: Response;
      try {
        res = await this.call(AGENT_API.bundleBatch, {
          method: 'POST',
          headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
          body: JSON.stringify({ digests: chunk }),
          signal,
        });
      } catch (err) {
        // 404 for the batch itself: a hub from before it. (Refusals come as a 200 listing them.)
        if (err instanceof HubCallError && err.status === 404)
          return this.bundlesOneByOne(credential, unique, signal);
        throw err;
      }
      const answer = await this.parse(AGENT_API.bundleBatch, res, bundleBatchResponseSchema);
      out.bundles.push(...answer.bundles);
      out.refused.push(...answer.refused);
    }
    return out;
  }

  private async bundlesOneByOne(
    credential: string,
    digests: readonly string[],
    signal?: AbortSignal,
  ): Promise<{ bundles: Bundle[]; refused: string[] }> {
    const out = { bundles: [] as Bundle[], refused: [] as string[] };
    for (const digest of digests) {
      try {
        out.bundles.push(await this.bundle(credential, digest, signal));
      } catch (err) {
        if (err instanceof HubCallError && err.status === 404) out.refused.push(digest);
        else throw err;
      }
    }
    return out;
  }

  /** The hub's answer lists the reports it examined and refused (`refused`), the rest are stored. */
  async postReports(
    credential: string,
    reports: Report[],
    signal?: AbortSignal,
  ): Promise<ReportBatchResponse> {
    const res = await this.call(AGENT_API.reports, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reports }),
      signal,
    });
    return this.parse(AGENT_API.reports, res, reportBatchResponseSchema);
  }

  private async call(path: string, init: RequestInit): Promise<Response> {
    if (!this.observe) return this.callHub(path, init);
    const t0 = performance.now();
    let outcome = 'ok';
    try {
      return await this.callHub(path, init);
    } catch (err) {
      outcome = err instanceof HubCallError ? err.code : 'error';
      throw err;
    } finally {
      this.observe(endpointOf(path), outcome, (performance.now() - t0) / 1000);
    }
  }

  private async callHub(path: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      // Every call announces the agent, so the hub knows what it may ask of it (see agent-features).
      const headers = {
        ...(init.headers as Record<string, string> | undefined),
        [AGENT_FEATURES_HEADER]: this.features.join(','),
        [AGENT_VERSION_HEADER]: this.agentVersion,
      };
      res = await fetch(this.baseUrl + path, { ...init, headers });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new HubCallError(
        'hub-unreachable',
        path,
        `cannot reach the hub at ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
      );
    }
    if (res.status === 304 || res.ok) return res;
    const text = await res.text().catch(() => '');
    const { detail, code } = describeApiError(text);
    if (res.status === 401 && code !== undefined && CREDENTIAL_GONE_CODES.includes(code)) {
      throw new HubCallError(
        'hub-credential-gone',
        path,
        `the hub says the agent's credential will not work again: ${detail}`,
        res.status,
        code,
      );
    }
    if (res.status === 401 || res.status === 403) {
      throw new HubCallError(
        'hub-unauthorized',
        path,
        `the hub (or a proxy before it) refused the agent's credentials (${res.status}): ${detail}`,
        res.status,
        code,
      );
    }
    if (res.status >= 500 || res.status === 429) {
      throw new HubCallError(
        'hub-server-error',
        path,
        `the hub failed (${res.status}): ${detail}`,
        res.status,
        code,
      );
    }
    if (res.status === 400 && code === AGENT_REFUSAL.reportsInvalid) {
      throw new HubCallError(
        'hub-reports-invalid',
        path,
        `the hub refused the reports as invalid: ${detail}`,
        res.status,
        code,
      );
    }
    throw new HubCallError(
      'hub-rejected',
      path,
      `the hub rejected the request (${res.status}): ${detail}`,
      res.status,
      code,
    );
  }

  private async parse<T>(path: string, res: Response, schema: z.ZodType<T>): Promise<T> {
    let body: unknown;
    try {
      body = await res.json();
    } catch (err) {
      throw new HubCallError(
        'hub-bad-response',
        path,
        `the hub sent invalid JSON: ${(err as Error).message}`,
      );
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      throw new HubCallError(
        'hub-bad-response',
        path,
        `the hub's answer does not match the agent protocol: ${z.prettifyError(parsed.error)}`,
      );
    }
    return parsed.data;
  }
}

function describeApiError(text: string): { detail: string; code?: string } {
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown };
    if (typeof body.message === 'string') {
      return typeof body.code === 'string'
        ? { detail: `${body.code}: ${body.message}`, code: body.code }
        : { detail: body.message };
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return { detail: text.slice(0, 300) || '(no body)' };
}
