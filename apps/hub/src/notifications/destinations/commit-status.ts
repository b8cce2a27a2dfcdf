import type { NotificationMessage } from '../notification-message.js';
import { repositoryPathOf } from '../../sources/repositories/repository-url.js';
import { DeliveryError, postJson } from './http-post.js';

export { repositoryPathOf };

export const GIT_HOST_PROVIDERS = ['github', 'gitlab', 'gitea'] as const;
export type GitHostProvider = (typeof GIT_HOST_PROVIDERS)[number];

/** Where each provider's API lives unless the destination names another (self-hosted, Gitea). */
export const DEFAULT_API_URLS: Partial<Record<GitHostProvider, string>> = {
  github: 'https://api.github.com',
  gitlab: 'https://gitlab.com/api/v4',
};

/**
 * The state a trigger sets on the commit: pending while the revision rolls out, success or failure
 * when it settles. A policy that sends another trigger to a commit-status destination is refused.
 */
export const COMMIT_STATE_OF: Readonly<Record<string, 'pending' | 'success' | 'failure'>> = {
  'rollout-started': 'pending',
  'rollout-step-started': 'pending',
  'rollout-step-completed': 'pending',
  deployed: 'success',
  'rollout-completed': 'success',
  'rollout-halted': 'failure',
  'automatic-rollback': 'failure',
  'sync-failed': 'failure',
};

export interface CommitStatusConfig {
  provider: GitHostProvider;
  apiUrl: string;
  /** `owner/name` (GitLab: the project's full path); unset = taken from the appset's repository URL. */
  repository?: string;
  /** The status's name on the commit; unset = `flotilla/<appset>`. */
  context?: string;
}

/** Posts the commit status the message's trigger stands for, in the provider's API. */
export async function sendCommitStatus(
  config: CommitStatusConfig,
  token: string,
  message: NotificationMessage,
  opts: { timeoutMs: number; repoUrl: string | null },
): Promise<void> {
  const state = COMMIT_STATE_OF[message.trigger];
  if (!state) throw new DeliveryError(`trigger ${message.trigger} sets no commit status`);
  const sha = message.revision;
  if (!sha || !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(sha))
    throw new DeliveryError(`the event names no single commit (revision ${sha ?? 'none'})`);
  const repository = config.repository ?? (opts.repoUrl ? repositoryPathOf(opts.repoUrl) : null);
  if (!repository)
    throw new DeliveryError(
      `no repository to set the status on: the appset's URL ${opts.repoUrl ?? '(none)'} has no owner/name; set repository on the destination`,
    );
  const context = config.context ?? `flotilla/${message.appSet ?? 'fleet'}`;
  const description = message.title.slice(0, 140);
  const api = config.apiUrl.replace(/\/+$/, '');
  switch (config.provider) {
    case 'github':
      await postJson(
        `${api}/repos/${repository}/statuses/${sha}`,
        JSON.stringify({ state, context, description }),
        { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json' },
        opts.timeoutMs,
      );
      return;
    case 'gitea':
      await postJson(
        `${api}/repos/${repository}/statuses/${sha}`,
        JSON.stringify({ state, context, description }),
        { authorization: `token ${token}` },
        opts.timeoutMs,
      );
      return;
    case 'gitlab':
      // GitLab says "failed" and "running"; the project is addressed by its URL-encoded full path.
      await postJson(
        `${api}/projects/${encodeURIComponent(repository)}/statuses/${sha}`,
        JSON.stringify({
          state: state === 'failure' ? 'failed' : state === 'pending' ? 'running' : state,
          name: context,
          description,
        }),
        { 'private-token': token },
        opts.timeoutMs,
      );
      return;
  }
}
