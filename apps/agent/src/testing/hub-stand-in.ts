import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import {
  AGENT_API,
  AGENT_FEATURES_HEADER,
  AGENT_VERSION_HEADER,
  AGENT_REFUSAL,
  type Assignment,
  type Bundle,
  type ClusterCapabilities,
  type HealthRule,
  type KubeObject,
  type Report,
  type TargetDeletion,
  assignmentSchema,
  bundleBatchRequestSchema,
  clusterCapabilitiesSchema,
  registerRequestSchema,
  reportBatchSchema,
  targetDeletionSchema,
} from '@flotilla/contract';
import { bundleDigest } from '@flotilla/manifests';
import { type z } from 'zod';

export type AssignmentInput = z.input<typeof assignmentSchema>;

/**
 * A minimal hub that speaks the agent protocol from `@flotilla/contract` over real HTTP on
 * 127.0.0.1, for the agent's own tests (the real hub is covered by the cross-app e2e test).
 * It can go away and come back on the same port, to play an unreachable hub.
 */
export class HubStandIn {
  readonly bootstrapToken = `boot-${randomUUID()}`;
  /** Every report, once, in arrival order. */
  readonly reports: Report[] = [];
  /** How many times each report id arrived (a replay counts twice). */
  readonly receipts = new Map<string, number>();
  readonly bundleFetches = new Map<string, number>();
  /** `POST bundles/batch` requests answered. */
  bundleBatches = 0;
  /** False plays a hub from before the batch endpoint (404: the agent asks one digest at a time). */
  batchBundles = true;
  registrations = 0;
  /** Every capabilities report the agent sent, in order. */
  readonly capabilityReports: ClusterCapabilities[] = [];
  /** The agent's features and version headers on its last assignments poll. */
  lastAnnouncement: { features?: string; version?: string } = {};
  /** Register attempts, answered or refused. */
  registerAttempts = 0;
  /** True: the bootstrap token works once, as the real hub's does. */
  singleUseBootstrap = false;
  /**
   * Answers a proxy in front of the hub would give (no typed body), one per request, in order,
   * before the hub itself sees the request.
   */
  readonly proxyAnswers: { status: number; path?: string }[] = [];
  /** A report for which this returns true makes its batch a 400 reports-invalid, as a broken report does. */
  invalidReport: ((r: Report) => boolean) | undefined;
  /** A report for which this returns true is listed as refused (invalid-text) in a 200, the rest stored. */
  unstorableReport: ((r: Report) => boolean) | undefined;

  private server: Server | undefined;
  private port = 0;
  private credential: string | undefined;
  /** Set by `refuseCredential`: the typed 401 the current credential gets from now on. */
  private credentialRefusal: string | undefined;
  private etagSeq = 1;
  private assignments: Assignment[] = [];
  private deletions: TargetDeletion[] = [];
  private healthRules: HealthRule[] = [];
  private readonly bundles = new Map<string, Bundle>();
  private readonly tampered = new Set<string>();
  private waiters: (() => void)[] = [];
  private polledEtags = new Set<string>();

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Listens on a free port the first time, then on the same port again after `stop()`. */
  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) =>
        send(res, 500, { code: 'internal', message: String(err) }),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const w of this.waiters.splice(0)) w();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Stores a bundle (content-addressed) and returns its digest. */
  addBundle(manifests: KubeObject[]): string {
    const digest = bundleDigest(manifests);
    this.bundles.set(digest, {
      digest,
      source: { repoUrl: 'https://git.example.com/fleet.git', revision: 'r', path: 'app' },
      manifests,
    });
    return digest;
  }

  /** From now on the current credential is refused with this typed code (an admin revoked it, say). */
  refuseCredential(code: string = AGENT_REFUSAL.credentialRevoked): void {
    this.credentialRefusal = code;
  }

  /** Serves the next fetch of this bundle with altered content (a corrupting proxy, say). */
  tamperOnce(digest: string): void {
    this.tampered.add(digest);
  }

  setAssignments(assignments: AssignmentInput[], deletions: TargetDeletion[] = []): void {
    this.assignments = assignments.map((a) => assignmentSchema.parse(a));
    this.deletions = deletions.map((d) => targetDeletionSchema.parse(d));
    this.etagSeq++;
    for (const w of this.waiters.splice(0)) w();
  }

  /** Custom health rules sent with the assignments from now on (a new ETag, as the hub's). */
  setHealthRules(rules: HealthRule[]): void {
    this.healthRules = rules;
    this.etagSeq++;
    for (const w of this.waiters.splice(0)) w();
  }

  /** True once the agent polled with the current etag, i.e. it has taken the latest assignments. */
  acknowledged(): boolean {
    return this.polledEtags.has(this.etag);
  }

  reportsOf<T extends Report['type']>(type: T): Extract<Report, { type: T }>[] {
    return this.reports.filter((r): r is Extract<Report, { type: T }> => r.type === type);
  }

  private get etag(): string {
    return `"${this.etagSeq}"`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const proxied = this.proxyAnswers.findIndex((a) => a.path === undefined || a.path === url.pathname);
    if (proxied >= 0) {
      const [answer] = this.proxyAnswers.splice(proxied, 1);
      req.resume();
      res.writeHead(answer?.status ?? 502, { 'content-type': 'text/html' });
      res.end(`<html><body>${answer?.status} from the proxy</body></html>`);
      return;
    }
    if (req.method === 'POST' && url.pathname === AGENT_API.register) {
      this.registerAttempts++;
      const body = registerRequestSchema.safeParse(await readJson(req));
      if (this.singleUseBootstrap && this.registrations > 0) {
        return send(res, 401, {
          code: 'bootstrap-token-used',
          message: 'the bootstrap token was already used',
        });
      }
      if (!body.success || body.data.bootstrapToken !== this.bootstrapToken) {
        return send(res, 401, {
          code: 'bootstrap-token-invalid',
          message: 'unknown or used bootstrap token',
        });
      }
      this.registrations++;
      this.credential = `cred-${randomUUID()}`;
      this.credentialRefusal = undefined;
      return send(res, 200, {
        clusterId: 'cluster-1',
        clusterName: body.data.clusterName,
        credential: this.credential,
        expiresAt: null,
      });
    }
    if (!this.credential || req.headers.authorization !== `Bearer ${this.credential}`) {
      return send(res, 401, {
        code: AGENT_REFUSAL.credentialUnknown,
        message: 'missing or unknown agent credential',
      });
    }
    if (this.credentialRefusal) {
      return send(res, 401, { code: this.credentialRefusal, message: 'this credential will not work again' });
    }
    if (req.method === 'GET' && url.pathname === AGENT_API.assignments) {
      const wait = Math.min(Number(url.searchParams.get('wait') ?? '0'), 30);
      const ifNoneMatch = req.headers['if-none-match'];
      if (ifNoneMatch) this.polledEtags.add(ifNoneMatch);
      this.lastAnnouncement = {
        features: req.headers[AGENT_FEATURES_HEADER] as string | undefined,
        version: req.headers[AGENT_VERSION_HEADER] as string | undefined,
      };
      if (req.headers['if-none-match'] === this.etag && wait > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait * 1000);
          this.waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      if (req.headers['if-none-match'] === this.etag) return send(res, 304);
      res.setHeader('etag', this.etag);
      return send(res, 200, {
        clusterName: 'east',
        etag: this.etag,
        assignments: this.assignments,
        ...(this.deletions.length > 0 && { deletions: this.deletions }),
        healthRules: this.healthRules,
      });
    }
    if (req.method === 'POST' && url.pathname === AGENT_API.bundleBatch && this.batchBundles) {
      const body = bundleBatchRequestSchema.safeParse(await readJson(req));
      if (!body.success) return send(res, 400, { code: 'invalid-request', message: body.error.message });
      this.bundleBatches++;
      const bundles: Bundle[] = [];
      const refused: string[] = [];
      for (const digest of new Set(body.data.digests)) {
        this.bundleFetches.set(digest, (this.bundleFetches.get(digest) ?? 0) + 1);
        const bundle = this.bundles.get(digest);
        if (!bundle) refused.push(digest);
        else if (this.tampered.delete(digest)) {
          bundles.push({
            ...bundle,
            manifests: [
              ...bundle.manifests,
              { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'injected' } },
            ],
          });
        } else bundles.push(bundle);
      }
      return send(res, 200, { bundles, refused });
    }
    const bundleMatch = /^\/api\/agent\/v1\/bundles\/(.+)$/.exec(url.pathname);
    if (req.method === 'GET' && bundleMatch?.[1]) {
      const digest = decodeURIComponent(bundleMatch[1]);
      this.bundleFetches.set(digest, (this.bundleFetches.get(digest) ?? 0) + 1);
      const bundle = this.bundles.get(digest);
      if (!bundle) return send(res, 404, { code: 'not-found', message: `no bundle ${digest}` });
      if (this.tampered.delete(digest)) {
        return send(res, 200, {
          ...bundle,
          manifests: [
            ...bundle.manifests,
            { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'injected' } },
          ],
        });
      }
      return send(res, 200, bundle);
    }
    if (req.method === 'PUT' && url.pathname === AGENT_API.capabilities) {
      const body = clusterCapabilitiesSchema.safeParse(await readJson(req));
      if (!body.success) return send(res, 400, { code: 'invalid-request', message: body.error.message });
      const last = this.capabilityReports.at(-1);
      this.capabilityReports.push(body.data);
      return send(res, 200, { changed: JSON.stringify(last) !== JSON.stringify(body.data) });
    }
    if (req.method === 'POST' && url.pathname === AGENT_API.reports) {
      const batch = reportBatchSchema.safeParse(await readJson(req));
      if (!batch.success) {
        return send(res, 400, { code: AGENT_REFUSAL.reportsInvalid, message: batch.error.message });
      }
      const invalid = this.invalidReport;
      if (invalid && batch.data.reports.some((r) => invalid(r))) {
        return send(res, 400, {
          code: AGENT_REFUSAL.reportsInvalid,
          message: 'reports[0]: not a valid report',
        });
      }
      let accepted = 0;
      const refused: { index: number; id: string; code: string; message: string }[] = [];
      for (const [index, r] of batch.data.reports.entries()) {
        if (this.unstorableReport?.(r)) {
          refused.push({ index, id: r.id, code: 'invalid-text', message: `report ${index} refused` });
          continue;
        }
        const n = (this.receipts.get(r.id) ?? 0) + 1;
        this.receipts.set(r.id, n);
        if (n === 1) {
          this.reports.push(r);
          accepted++;
        }
      }
      return send(res, 200, {
        accepted,
        duplicates: batch.data.reports.length - accepted - refused.length,
        ...(refused.length > 0 && { refused }),
      });
    }
    return send(res, 404, { code: 'NOT_FOUND', message: `${req.method} ${url.pathname}` });
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (res.headersSent || res.destroyed) return;
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
