import type { GitHostKind } from '@flotilla/contract';

/** A Git host refused or could not be reached: `status` is its HTTP answer (0 = no answer). */
export class PullRequestError extends Error {
  override readonly name = 'PullRequestError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface PullRequestHost {
  kind: GitHostKind;
  /** GitHub `https://api.github.com`, GitLab `<host>/api/v4`, Gitea `<host>/api/v1`. */
  apiUrl: string;
  /** `owner/name`; GitLab: the project's full path. */
  repository: string;
  token: string;
}

export interface PullRequestInput {
  title: string;
  body: string;
  /** The pushed branch and the branch it asks to be merged into. */
  head: string;
  base: string;
}

export interface OpenedPullRequest {
  url: string;
  number: number;
}

const TIMEOUT_MS = 30_000;

/** Opens a pull request (GitLab: a merge request) through the host's REST API. */
export async function openPullRequest(
  host: PullRequestHost,
  pr: PullRequestInput,
): Promise<OpenedPullRequest> {
  const api = host.apiUrl.replace(/\/+$/, '');
  switch (host.kind) {
    case 'github': {
      const answer = await post(
        `${api}/repos/${host.repository}/pulls`,
        { title: pr.title, body: pr.body, head: pr.head, base: pr.base },
        { authorization: `Bearer ${host.token}`, accept: 'application/vnd.github+json' },
      );
      return opened(answer, 'html_url', 'number');
    }
    case 'gitea': {
      const answer = await post(
        `${api}/repos/${host.repository}/pulls`,
        { title: pr.title, body: pr.body, head: pr.head, base: pr.base },
        { authorization: `token ${host.token}` },
      );
      return opened(answer, 'html_url', 'number');
    }
    case 'gitlab': {
      // The project is addressed by its URL-encoded full path; a merge request's number is its iid.
      const answer = await post(
        `${api}/projects/${encodeURIComponent(host.repository)}/merge_requests`,
        {
          title: pr.title,
          description: pr.body,
          source_branch: pr.head,
          target_branch: pr.base,
          remove_source_branch: true,
        },
        { 'private-token': host.token },
      );
      return opened(answer, 'web_url', 'iid');
    }
  }
}

async function post(url: string, body: unknown, headers: Record<string, string>): Promise<unknown> {
  const origin = new URL(url).origin;
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'flotilla-hub', ...headers },
      body: JSON.stringify(body),
      redirect: 'error',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (e) {
    const cause =
      e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS} ms` : String(e);
    throw new PullRequestError(0, `POST ${origin}: ${cause}`);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) {
    const why =
      res.status === 401 || res.status === 403
        ? 'the host refused the API token'
        : res.status === 422 || res.status === 409
          ? 'the host refused the pull request'
          : 'the host answered an error';
    throw new PullRequestError(
      res.status,
      `${why} (POST ${origin} answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''})`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new PullRequestError(res.status, `POST ${origin} answered ${res.status} without JSON`);
  }
}

function opened(answer: unknown, urlField: string, numberField: string): OpenedPullRequest {
  const a = (answer ?? {}) as Record<string, unknown>;
  const url = a[urlField];
  const number = a[numberField];
  if (typeof url !== 'string' || typeof number !== 'number')
    throw new PullRequestError(200, `the host's answer has no ${urlField} and ${numberField}`);
  return { url, number };
}
