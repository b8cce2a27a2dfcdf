import { z } from 'zod';
import type { WebhookDelivery } from './webhook-signature.js';

/** What a push tells the hub: the repository's URLs (any of them may be the registered one), the ref and new commit. */
export interface PushEvent {
  repoUrls: string[];
  ref: string;
  after: string;
}

export type WebhookEvent =
  { kind: 'ping' } | { kind: 'push'; push: PushEvent } | { kind: 'ignored'; event: string };

const optionalUrl = z.string().min(1).optional();

// GitHub and Gitea share the payload shape for the fields the hub reads.
const githubPushSchema = z.object({
  ref: z.string().min(1),
  after: z.string().min(1),
  repository: z.object({ clone_url: optionalUrl, html_url: optionalUrl, ssh_url: optionalUrl }),
});

const gitlabPushSchema = z.object({
  ref: z.string().min(1),
  after: z.string().min(1),
  project: z.object({ git_http_url: optionalUrl, git_ssh_url: optionalUrl, web_url: optionalUrl }),
});

/** Which events are pushes, per provider; GitLab names tag pushes separately. */
const PUSH_EVENTS: Record<WebhookDelivery['provider'], readonly string[]> = {
  github: ['push'],
  gitea: ['push'],
  gitlab: ['Push Hook', 'Tag Push Hook'],
};

/**
 * Reads a verified delivery's JSON body. Throws the zod error of a push payload that lacks a field
 * the hub needs (its issues carry the field path).
 */
export function parseWebhookEvent(delivery: WebhookDelivery, body: unknown): WebhookEvent {
  if (delivery.event === 'ping') return { kind: 'ping' };
  if (!PUSH_EVENTS[delivery.provider].includes(delivery.event))
    return { kind: 'ignored', event: delivery.event };
  if (delivery.provider === 'gitlab') {
    const p = gitlabPushSchema.parse(body);
    return {
      kind: 'push',
      push: {
        ref: p.ref,
        after: p.after,
        repoUrls: present([p.project.git_http_url, p.project.git_ssh_url, p.project.web_url]),
      },
    };
  }
  const p = githubPushSchema.parse(body);
  return {
    kind: 'push',
    push: {
      ref: p.ref,
      after: p.after,
      repoUrls: present([p.repository.clone_url, p.repository.html_url, p.repository.ssh_url]),
    },
  };
}

function present(urls: (string | undefined)[]): string[] {
  return [...new Set(urls.filter((u): u is string => u !== undefined))];
}

/**
 * A comparable form of a Git URL: no `.git` suffix or trailing slash, lower-case scheme and host, no
 * credentials; `user@host:path` (scp-like SSH) is written as `ssh://host/path` so both SSH spellings match.
 */
export function normaliseRepoUrl(url: string): string {
  let u = url.trim();
  const scp = /^(?:[\w.-]+@)?([\w.-]+):(?!\/\/)(.*)$/.exec(u);
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(u)) u = `ssh://${scp[1] ?? ''}/${scp[2] ?? ''}`;
  let path: string;
  let origin: string;
  try {
    const parsed = new URL(u);
    origin = `${parsed.protocol.toLowerCase()}//${parsed.hostname.toLowerCase()}${parsed.port ? `:${parsed.port}` : ''}`;
    path = parsed.pathname;
  } catch {
    return u.replace(/\/+$/, '').replace(/\.git$/, '');
  }
  path = path
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
  return `${origin}${path}`;
}
