import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { type AddressInfo } from 'node:net';
import { type AgentMetrics } from './agent-metrics.js';

/** What /readyz reports, check by check; ready when every one says `ok`. */
export type ReadinessChecks = Record<string, string>;

export interface StatusSources {
  /** False once the agent's loops have ended (stopped or crashed): the kubelet should restart it. */
  live: () => boolean;
  /** The checks that decide readiness, and how the hub answers (shown, never deciding). */
  readiness: () => { checks: ReadinessChecks; hub: string };
  metrics: AgentMetrics;
}

export class StatusServerError extends Error {
  readonly code = 'agent-status-port';
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'StatusServerError';
  }
}

/**
 * The agent's only listening socket: `/healthz` (liveness), `/readyz` (readiness, with its checks)
 * and Prometheus `/metrics`. GET and HEAD only; nothing here changes the agent.
 */
export class StatusServer {
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(host: string, port: number, sources: StatusSources): Promise<StatusServer> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      const json = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(req.method === 'HEAD' ? undefined : JSON.stringify(body));
      };
      if (path === '/healthz') {
        const live = sources.live();
        json(live ? 200 : 503, { status: live ? 'ok' : 'stopped' });
      } else if (path === '/readyz') {
        const { checks, hub } = sources.readiness();
        const ready = Object.values(checks).every((v) => v === 'ok');
        json(ready ? 200 : 503, { status: ready ? 'ok' : 'not-ready', checks, hub });
      } else if (path === '/metrics') {
        sources.metrics.text().then(
          (text) => {
            res.writeHead(200, { 'content-type': sources.metrics.contentType });
            res.end(req.method === 'HEAD' ? undefined : text);
          },
          (err: unknown) => json(500, { status: 'error', message: (err as Error).message }),
        );
      } else json(404, { status: 'not-found', paths: ['/healthz', '/readyz', '/metrics'] });
    });
    // A scrape or probe that never finishes must not hold a socket forever.
    server.requestTimeout = 10_000;
    server.headersTimeout = 10_000;
    server.listen(port, host);
    try {
      await Promise.race([
        once(server, 'listening'),
        once(server, 'error').then(([err]) => {
          throw err as Error;
        }),
      ]);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new StatusServerError(
        `cannot serve /healthz, /readyz and /metrics on ${host}:${port}: ${e.code ?? e.message}`,
        'FLOTILLA_STATUS_PORT',
      );
    }
    const address = server.address() as AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return new StatusServer(server, `http://${shown}:${address.port}`);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close').catch(() => undefined);
  }
}
