import { createServer, type Server } from 'node:http';

/** A commit status (or a pull request) as the local API received it. */
export interface ReceivedStatus {
  path: string;
  authorization: string | null;
  privateToken: string | null;
  body: Record<string, unknown>;
}

/** A pull request (GitLab: merge request) as the local API received it, with the answer it gave. */
export interface ReceivedPullRequest extends ReceivedStatus {
  /** The URL answered (GitHub and Gitea `html_url`, GitLab `web_url`); null when it was refused. */
  url: string | null;
}

export interface TestGitHostApi {
  /** `http://127.0.0.1:<port>` (GitHub's form; GitLab's is `<url>/api/v4`, Gitea's `<url>/api/v1`). */
  url: string;
  statuses(): ReceivedStatus[];
  pullRequests(): ReceivedPullRequest[];
  /** The next pull request is refused with this status (401: a bad token; 422: the host says no). */
  refuseNextPullRequest(status: number): void;
  close(): Promise<void>;
}

const STATUS_PATHS = [
  // GitHub and Gitea: POST /repos/{owner}/{repo}/statuses/{sha}
  /^(\/api\/v1)?\/repos\/[^/]+\/[^/]+\/statuses\/[0-9a-f]{40}$/,
  // GitLab: POST /api/v4/projects/{url-encoded path}/statuses/{sha}
  /^\/api\/v4\/projects\/[^/]+\/statuses\/[0-9a-f]{40}$/,
];

// GitHub and Gitea: POST /repos/{owner}/{repo}/pulls; GitLab: POST /api/v4/projects/{id}/merge_requests.
const PULL_PATH = /^(\/api\/v1)?\/repos\/([^/]+\/[^/]+)\/pulls$/;
const MERGE_REQUEST_PATH = /^\/api\/v4\/projects\/([^/]+)\/merge_requests$/;

/**
 * The commit-status and pull-request endpoints of GitHub, GitLab and Gitea on 127.0.0.1: a POST to
 * one of their paths with a JSON body is recorded and answered 201 as those hosts do (a pull request
 * with its URL and number); anything else is 404.
 */
export async function startTestGitHostApi(): Promise<TestGitHostApi> {
  const received: ReceivedStatus[] = [];
  const pulls: ReceivedPullRequest[] = [];
  const refusals: number[] = [];
  let base = '';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const answer = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method !== 'POST') return answer(404, { message: 'Not Found' });
      const got = {
        path,
        authorization: req.headers.authorization ?? null,
        privateToken: (req.headers['private-token'] as string | undefined) ?? null,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
      };
      if (STATUS_PATHS.some((p) => p.test(path))) {
        received.push(got);
        return answer(201, { id: 1 });
      }
      const pull = PULL_PATH.exec(path);
      const mergeRequest = MERGE_REQUEST_PATH.exec(path);
      if (!pull && !mergeRequest) return answer(404, { message: 'Not Found' });
      const refusal = refusals.shift();
      if (refusal !== undefined) {
        pulls.push({ ...got, url: null });
        return answer(refusal, { message: refusal === 401 ? 'Bad credentials' : 'Validation Failed' });
      }
      const number = pulls.filter((p) => p.url !== null).length + 1;
      if (pull) {
        const url = `${base}/${pull[2] ?? ''}/pull/${number}`;
        pulls.push({ ...got, url });
        return answer(201, { number, html_url: url });
      }
      const url = `${base}/${decodeURIComponent(mergeRequest?.[1] ?? '')}/-/merge_requests/${number}`;
      pulls.push({ ...got, url });
      return answer(201, { iid: number, web_url: url });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  base = `http://127.0.0.1:${port}`;
  return {
    url: base,
    statuses: () => [...received],
    pullRequests: () => [...pulls],
    refuseNextPullRequest: (status) => refusals.push(status),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
