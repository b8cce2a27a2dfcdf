import { createServer, type Server } from 'node:http';

/** A commit status as the local API received it. */
export interface ReceivedStatus {
  path: string;
  authorization: string | null;
  privateToken: string | null;
  body: Record<string, unknown>;
}

export interface TestGitHostApi {
  /** `http://127.0.0.1:<port>` (GitHub's form; GitLab's is `<url>/api/v4`, Gitea's `<url>/api/v1`). */
  url: string;
  statuses(): ReceivedStatus[];
  close(): Promise<void>;
}

const STATUS_PATHS = [
  // GitHub and Gitea: POST /repos/{owner}/{repo}/statuses/{sha}
  /^(\/api\/v1)?\/repos\/[^/]+\/[^/]+\/statuses\/[0-9a-f]{40}$/,
  // GitLab: POST /api/v4/projects/{url-encoded path}/statuses/{sha}
  /^\/api\/v4\/projects\/[^/]+\/statuses\/[0-9a-f]{40}$/,
];

/**
 * The commit-status endpoints of GitHub, GitLab and Gitea on 127.0.0.1: a POST to one of their paths
 * with a JSON body is recorded and answered 201 as those hosts do; anything else is 404.
 */
export async function startTestGitHostApi(): Promise<TestGitHostApi> {
  const received: ReceivedStatus[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (req.method !== 'POST' || !STATUS_PATHS.some((p) => p.test(path))) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
        return;
      }
      received.push({
        path,
        authorization: req.headers.authorization ?? null,
        privateToken: (req.headers['private-token'] as string | undefined) ?? null,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
      });
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":1}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    statuses: () => [...received],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
