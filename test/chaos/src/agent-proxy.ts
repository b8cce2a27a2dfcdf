import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { type Socket } from 'node:net';
import { AGENT_API, type Report } from '@flotilla/contract';
import { freePort } from '@flotilla/cli/fleet';

/** What the agents sent: every report id with what it was about, and how often it was posted. */
export interface SentReport {
  id: string;
  type: Report['type'];
  targetId: string;
  /** Sync reports: the revision synced; drift reports: the drift state. */
  revision?: string;
  /** Sync reports of a requested sync: the operation it carried out. */
  operationId?: string;
  state?: string;
  posts: number;
  /** True once a POST carrying it was answered 2xx by a hub. */
  acknowledged: boolean;
}

/** A status the proxy answers by itself, the way a misconfigured ingress or an auth proxy in front of the hub does. */
export type ProxyFaultStatus = 401 | 404 | 413 | 503;

/** Bodies as ingress-nginx sends them: HTML, no JSON error code the agent could mistake for the hub's. */
const FAULT_BODIES: Record<ProxyFaultStatus, string> = {
  401: '<html><head><title>401 Authorization Required</title></head><body><center><h1>401 Authorization Required</h1></center><hr><center>nginx</center></body></html>',
  404: '<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>',
  413: '<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>',
  503: '<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center><hr><center>nginx</center></body></html>',
};

/** What the proxy answered by itself while a fault was set: requests, and report POSTs among them. */
export interface FaultedRequests {
  requests: number;
  reportPosts: number;
  /** Report POSTs per bearer credential, so a run can tell that every agent met the fault. */
  reportPostsBy: Map<string, number>;
}

/**
 * The agents' only way to the hubs: a loopback HTTP proxy that forwards every request to one of the
 * live hub processes (round robin; the next one when a hub refuses the connection) and keeps the
 * agent side of the ledger — every report id posted, every bundle fetched. A chaos run compares this
 * ledger with the hub's rows, so "nothing lost, nothing doubled" is checked against what was sent,
 * not against what the hub believes it received.
 */
export class AgentProxy {
  readonly sent = new Map<string, SentReport>();
  readonly bundleFetches = new Map<string, number>();
  /** Per fault status, what was answered with it instead of reaching a hub. */
  readonly faulted = new Map<ProxyFaultStatus, FaultedRequests>();
  /** Registration requests (bootstrap token) that reached a hub: an agent that re-registers shows here. */
  registrations = 0;
  private fault: ProxyFaultStatus | undefined;
  private upstreams: string[] = [];
  private next = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(upstreams: string[]): Promise<AgentProxy> {
    const port = await freePort();
    const server = createServer();
    const proxy = new AgentProxy(server, `http://127.0.0.1:${port}`);
    proxy.setUpstreams(upstreams);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void proxy.handle(req, res));
    server.on('connection', (s: Socket) => {
      proxy.sockets.add(s);
      s.once('close', () => proxy.sockets.delete(s));
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return proxy;
  }

  setUpstreams(urls: string[]): void {
    this.upstreams = [...urls];
  }

  /** From now on every request is answered `status` by the proxy itself (undefined: forward again). */
  setFault(status: ProxyFaultStatus | undefined): void {
    this.fault = status;
  }

  /** Report ids posted so far, by type. */
  sentOfType(type: Report['type']): SentReport[] {
    return [...this.sent.values()].filter((r) => r.type === type);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.server.close();
    await once(this.server, 'close').catch(() => undefined);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const path = req.url ?? '/';
    const posted =
      req.method === 'POST' && path.startsWith(AGENT_API.reports) ? this.recordReports(body) : [];
    const fault = this.fault;
    if (fault !== undefined) {
      // Recorded as posted all the same: the ledger must show these reports arriving later, once.
      const f = this.faulted.get(fault) ?? { requests: 0, reportPosts: 0, reportPostsBy: new Map() };
      f.requests++;
      if (posted.length > 0) {
        f.reportPosts++;
        const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
        f.reportPostsBy.set(bearer, (f.reportPostsBy.get(bearer) ?? 0) + 1);
      }
      this.faulted.set(fault, f);
      res.writeHead(fault, { 'content-type': 'text/html' });
      res.end(FAULT_BODIES[fault]);
      return;
    }
    for (const digest of bundlesAskedFor(req.method, path, body)) {
      this.bundleFetches.set(digest, (this.bundleFetches.get(digest) ?? 0) + 1);
    }
    if (req.method === 'POST' && path.startsWith(AGENT_API.register)) this.registrations++;
    const order = this.upstreams.map(
      (_, i) => this.upstreams[(this.next + i) % this.upstreams.length] as string,
    );
    this.next++;
    for (const upstream of order) {
      const answered = await this.forward(upstream, req, body, res);
      if (answered === 'refused') continue;
      if (answered >= 200 && answered < 300) for (const id of posted) this.ackReport(id);
      return;
    }
    // Every hub is down: answer as a load balancer would, so the agent backs off and retries.
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ code: 'bad-gateway', message: 'no hub answers' }));
  }

  private recordReports(body: Buffer): string[] {
    let parsed: { reports?: Report[] };
    try {
      parsed = JSON.parse(body.toString('utf8')) as { reports?: Report[] };
    } catch {
      return [];
    }
    const ids: string[] = [];
    for (const r of parsed.reports ?? []) {
      const known = this.sent.get(r.id);
      if (known) known.posts++;
      else
        this.sent.set(r.id, {
          id: r.id,
          type: r.type,
          targetId: r.targetId,
          ...(r.type === 'sync' && { revision: r.revision }),
          ...(r.type === 'sync' && r.operationId !== undefined && { operationId: r.operationId }),
          ...(r.type === 'drift' && { state: r.state }),
          posts: 1,
          acknowledged: false,
        });
      ids.push(r.id);
    }
    return ids;
  }

  private ackReport(id: string): void {
    const r = this.sent.get(id);
    if (r) r.acknowledged = true;
  }

  /** Forwards one request; 'refused' when the hub could not be reached before any byte was answered. */
  private forward(
    upstream: string,
    req: IncomingMessage,
    body: Buffer,
    res: ServerResponse,
  ): Promise<number | 'refused'> {
    return new Promise((resolve) => {
      const target = new URL(req.url ?? '/', upstream);
      const headers = { ...req.headers, host: target.host };
      const out = request(target, { method: req.method, headers }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
        upRes.once('end', () => resolve(upRes.statusCode ?? 502));
        // A hub killed in the middle of an answer (a long-poll, say): the agent sees a cut connection.
        upRes.once('error', () => {
          res.destroy();
          resolve(599);
        });
      });
      out.once('error', () => {
        if (res.headersSent) {
          res.destroy();
          resolve(599);
        } else resolve('refused');
      });
      // The agent went away (stopped, or its long-poll aborted): drop the upstream request too.
      res.once('close', () => {
        if (!res.writableFinished) out.destroy();
      });
      out.end(body);
    });
  }
}

/** The digests a request asks bundles for: `POST bundles/batch` names them in its body, `GET bundles/:digest` in its path. */
function bundlesAskedFor(method: string | undefined, path: string, body: Buffer): string[] {
  if (method === 'POST' && path.startsWith(AGENT_API.bundleBatch)) {
    try {
      const parsed = JSON.parse(body.toString('utf8')) as { digests?: unknown };
      return Array.isArray(parsed.digests) ? parsed.digests.filter((d) => typeof d === 'string') : [];
    } catch {
      return [];
    }
  }
  const one = /^\/api\/agent\/v1\/bundles\/([^/?]+)/.exec(path)?.[1];
  return method === 'GET' && one ? [decodeURIComponent(one)] : [];
}
