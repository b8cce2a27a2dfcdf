import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';
import { uniqueName } from '../support/test-services.js';

/**
 * A push webhook instead of polling: the hub polls Git only once a day (at a point in the day drawn
 * from the repository's id), so a new commit can reach the clusters within the test only through a
 * signed GitHub webhook. A wrongly signed one is
 * refused and moves nothing.
 */
describe('push webhook end to end', () => {
  const secret = `e2e-${uniqueName('webhook-secret')}`;
  let e2e: GuestbookFleet;

  beforeAll(async () => {
    e2e = await GuestbookFleet.start({
      name: 'wh',
      clusters: 2,
      pollSeconds: 86_400,
      hubEnv: { FLOTILLA_WEBHOOK_SECRET: secret },
    });
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
  });

  /** A GitHub push delivery for the repository, signed with `key`. */
  function sendPush(after: string, key: string): Promise<Response> {
    const body = JSON.stringify({
      ref: 'refs/heads/main',
      before: '0'.repeat(40),
      after,
      repository: {
        clone_url: e2e.repoUrl,
        html_url: e2e.repoUrl.replace(/\.git$/, ''),
        ssh_url: 'git@example.com:x.git',
      },
    });
    return fetch(`${e2e.fleet.hubUrl}/api/v1/webhooks/git`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': uniqueName('delivery'),
        'x-hub-signature-256': `sha256=${createHmac('sha256', key).update(body).digest('hex')}`,
      },
      body,
    });
  }

  it('fetches, renders and delivers a pushed commit as soon as a signed webhook arrives', async () => {
    const { fleet } = e2e;
    await e2e.createAppSet();
    const first = await e2e.head();
    await expect
      .poll(() => e2e.targetStates(), { timeout: 60_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(first));

    const second = await e2e.commitImageTag('1.2.0');
    const refused = await sendPush(second, 'a-secret-the-hub-does-not-know');
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe('webhook-signature-invalid');
    // Give a wrongly queued fetch time to show; nothing may move.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await e2e.targetStates()).toEqual(e2e.allSyncedAt(first));
    const [repository] = await fleet.api.repositories();
    expect(repository?.url).toBe(e2e.repoUrl);

    const accepted = await sendPush(second, secret);
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toEqual({ matched: [repository?.id], queued: 1 });

    await expect
      .poll(() => e2e.images(), { timeout: 60_000, interval: 500 })
      .toEqual(fleet.clusters.map(() => 'ghcr.io/example/guestbook-ui:1.2.0'));
    await expect
      .poll(() => e2e.targetStates(), { timeout: 30_000, interval: 500 })
      .toEqual(e2e.allSyncedAt(second));
  }, 180_000);
});
