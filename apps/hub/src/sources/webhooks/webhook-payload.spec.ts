import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { normaliseRepoUrl, parseWebhookEvent } from './webhook-payload.js';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8'));

describe('parseWebhookEvent', () => {
  it('reads a GitHub push: ref, new commit and every URL of the repository', () => {
    expect(parseWebhookEvent({ provider: 'github', event: 'push' }, fixture('github-push.json'))).toEqual({
      kind: 'push',
      push: {
        ref: 'refs/heads/main',
        after: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
        repoUrls: [
          'https://github.com/Example/guestbook.git',
          'https://github.com/Example/guestbook',
          'git@github.com:Example/guestbook.git',
        ],
      },
    });
  });

  it('reads a Gitea push and a GitLab push (project URLs)', () => {
    const gitea = parseWebhookEvent({ provider: 'gitea', event: 'push' }, fixture('gitea-push.json'));
    expect(gitea).toEqual({
      kind: 'push',
      push: {
        ref: 'refs/heads/main',
        after: 'bffeb74224043ba2feb48d137756c8a9331c449a',
        repoUrls: [
          'https://gitea.example.com/platform/fleet.git',
          'https://gitea.example.com/platform/fleet',
          'ssh://git@gitea.example.com:2222/platform/fleet.git',
        ],
      },
    });
    const gitlab = parseWebhookEvent({ provider: 'gitlab', event: 'Push Hook' }, fixture('gitlab-push.json'));
    expect(gitlab).toEqual({
      kind: 'push',
      push: {
        ref: 'refs/heads/main',
        after: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
        repoUrls: [
          'https://gitlab.example.com/platform/fleet.git',
          'git@gitlab.example.com:platform/fleet.git',
          'https://gitlab.example.com/platform/fleet',
        ],
      },
    });
  });

  it('answers ping, and ignores events that are not pushes', () => {
    expect(parseWebhookEvent({ provider: 'github', event: 'ping' }, { zen: 'hi' })).toEqual({ kind: 'ping' });
    expect(parseWebhookEvent({ provider: 'github', event: 'issues' }, {})).toEqual({
      kind: 'ignored',
      event: 'issues',
    });
    expect(
      parseWebhookEvent({ provider: 'gitlab', event: 'Tag Push Hook' }, fixture('gitlab-push.json')).kind,
    ).toBe('push');
  });

  it('refuses a push without the fields it needs, with their path', () => {
    const broken = { ...(fixture('github-push.json') as object), repository: { clone_url: 42 } };
    try {
      parseWebhookEvent({ provider: 'github', event: 'push' }, broken);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(z.ZodError);
      expect((e as z.ZodError).issues.map((i) => i.path.join('.'))).toEqual(['repository.clone_url']);
    }
    expect(() =>
      parseWebhookEvent({ provider: 'gitlab', event: 'Push Hook' }, { ref: 'x', after: 'y' }),
    ).toThrow(z.ZodError);
  });
});

describe('normaliseRepoUrl', () => {
  it('ignores .git, trailing slashes, the host case and credentials, but not the path case', () => {
    const same = [
      'https://GitHub.com/Example/guestbook.git',
      'https://github.com/Example/guestbook/',
      'https://token@github.com/Example/guestbook',
    ];
    expect(new Set(same.map(normaliseRepoUrl))).toEqual(new Set(['https://github.com/Example/guestbook']));
    expect(normaliseRepoUrl('https://github.com/example/guestbook')).not.toBe(
      normaliseRepoUrl('https://github.com/Example/guestbook'),
    );
  });

  it('writes scp-like SSH as ssh://, keeps ports, and leaves git:// URLs comparable', () => {
    expect(normaliseRepoUrl('git@github.com:Example/guestbook.git')).toBe(
      'ssh://github.com/Example/guestbook',
    );
    expect(normaliseRepoUrl('ssh://git@github.com/Example/guestbook.git')).toBe(
      'ssh://github.com/Example/guestbook',
    );
    expect(normaliseRepoUrl('ssh://git@gitea.example.com:2222/platform/fleet.git')).toBe(
      'ssh://gitea.example.com:2222/platform/fleet',
    );
    expect(normaliseRepoUrl('git://127.0.0.1:9418/guestbook.git')).toBe('git://127.0.0.1:9418/guestbook');
  });
});
