import { readFileSync } from 'node:fs';
import type { AppSetView } from '@flotilla/contract';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';
import {
  hasChromium,
  launchChromium,
  newWatchedPage,
  seriousAccessibilityViolations,
} from '../support/browser.js';

const ADMIN_TOKEN = 'console-e2e-admin-token-0123456789abcdef';
const HOSTILE = '<img src=x onerror=alert(1)>';
const short = (sha: string) => sha.slice(0, 7);

/**
 * The web console in Debian's Chromium against a real fleet: the hub (on PostgreSQL and Redis)
 * serving the built console, simulated clusters with their agents, the guestbook in git daemon.
 * Automated sync is off, so every change waits for a person, who makes it in the browser.
 */
describe.skipIf(!hasChromium)('the web console in Chromium', () => {
  let e2e: GuestbookFleet;
  let browser: Browser;
  let page: Page;
  let dialogs: string[];
  let pageErrors: string[];
  const cluster = (i: number) => e2e.fleet.clusters[i]!.name;
  const targetOf = (i: number) => `${cluster(i)}-guestbook`;
  const row = (i: number) =>
    page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: cluster(i) }) });
  const nav = () => page.getByRole('navigation', { name: 'Views' });
  const expectAccessible = async () => expect(await seriousAccessibilityViolations(page)).toEqual([]);

  // Chromium, a hub and agents share two cores with other work: a poll may take up to 10 s to see
  // what it waits for (it ends as soon as it does; nothing here asserts how long anything took).
  beforeAll(() => vi.setConfig({ expect: { poll: { timeout: 10_000 } } }));
  afterAll(() => vi.resetConfig());
  beforeAll(async () => {
    e2e = await GuestbookFleet.start({
      name: 'console',
      clusters: 2,
      pollSeconds: 1,
      hubEnv: { FLOTILLA_ADMIN_TOKEN: ADMIN_TOKEN },
      labels: (i): Record<string, string> => (i === 0 ? { env: 'prod', note: HOSTILE } : { env: 'staging' }),
    });
    await e2e.createAppSet({});
    browser = await launchChromium();
    // The viewer's zone differs from the window's, as it does for a team across continents.
    ({ page, dialogs, pageErrors } = await newWatchedPage(browser, { timezoneId: 'America/New_York' }));
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await e2e?.stop();
  }, 60_000);

  it('asks for a token, and signs in from the keyboard', async () => {
    await page.goto(`${e2e.fleet.hubUrl}/`);
    await expect
      .poll(() => page.getByRole('heading', { name: 'Sign in to Flotilla' }).isVisible())
      .toBe(true);
    await expectAccessible();
    await page.keyboard.press('Tab');
    await page.keyboard.type('wrong-token');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('does not accept this token');
    await page.getByLabel('API token').fill(ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('heading', { name: 'Fleet', level: 1 }).isVisible()).toBe(true);
    expect(await page.getByText('user:admin (admin)').isVisible()).toBe(true);
  }, 60_000);

  it('shows the fleet, names from clusters as text, and finds a cluster by label', async () => {
    await expect.poll(() => row(0).textContent(), { timeout: 60_000 }).toContain('ManualSyncRequired');
    expect(await row(0).textContent()).toContain(`note=${HOSTILE}`);
    expect(await page.locator('img').count()).toBe(0);
    await expectAccessible();

    await page.getByLabel('Cluster labels').fill('env=prod');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.getByTestId('fleet-counts').textContent()).toMatch(/^1 clusters/);
    expect(await row(1).count()).toBe(0);
    expect(page.url()).toContain('selector=env%3Dprod');
    expect(await row(0).textContent()).toContain(short(await e2e.head()));
  }, 90_000);

  it('shows a commit arrive without a reload', async () => {
    const commit = await e2e.commitImageTag('v2-console');
    await expect.poll(() => row(0).textContent(), { timeout: 60_000 }).toContain(short(commit));
  }, 90_000);

  it('opens a target and syncs it by hand; history says who and why', async () => {
    await row(0).getByRole('link').first().click();
    await expect
      .poll(() => page.getByRole('heading', { name: targetOf(0), level: 1 }).isVisible())
      .toBe(true);
    await expect.poll(() => page.getByTestId('target-reason').textContent()).toContain('ManualSyncRequired');
    // The live diff: the agent compared what Git wants with the cluster, and applied nothing yet.
    await expect
      .poll(() => page.getByTestId('diff-summary').textContent(), { timeout: 60_000 })
      .toMatch(/^(\d+) of \1 objects would change\..*against [0-9a-f]{7}\.$/);
    expect(
      (await page.getByRole('region', { name: 'Live diff' }).locator('pre').allTextContents()).join('\n'),
    ).toMatch(/^\+ +- image: [^\n]*guestbook-ui:v2-console$/m);
    await expectAccessible();
    await page.getByLabel('Reason for the sync').fill('reviewed v2 in the console');
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page
      .getByRole('dialog', { name: `Sync ${targetOf(0)}?` })
      .getByRole('button', { name: 'Confirm sync' })
      .click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Sync requested' }).count()).toBe(1);
    const head = await e2e.head();
    await expect
      .poll(() => page.getByTestId('synced-revision').textContent(), { timeout: 90_000 })
      .toBe(short(head));
    await expect
      .poll(() => page.getByTestId('target-reason').textContent(), { timeout: 60_000 })
      .toContain('none');
    await expect
      .poll(() => page.getByTestId('operations').textContent())
      .toContain('reviewed v2 in the console');
    expect((await e2e.images())[0]).toMatch(/guestbook-ui:v2-console$/);
    await expect
      .poll(() => page.getByTestId('diff-summary').textContent(), { timeout: 60_000 })
      .toMatch(/^In sync: the \d+ objects Git declares match the cluster\./);
    await expect
      .poll(() => page.getByTestId('target-events').textContent())
      .toContain('reviewed v2 in the console');
  }, 150_000);

  it('adds a deny window and the held cell says which window holds it', async () => {
    await page.getByRole('link', { name: 'Windows' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Sync windows' }).isVisible()).toBe(true);
    await expectAccessible();
    const form = page.getByRole('form', { name: 'Add a sync window' });
    await form.getByLabel('Name', { exact: true }).fill('console-freeze');
    await form.getByLabel('Schedule').fill('* * * * *');
    await form.getByLabel('Duration').fill('2h');
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    await form.getByLabel('Clusters').fill(cluster(1));
    await form.getByLabel('Reason').fill('change freeze for the e2e');
    await form.getByRole('button', { name: 'Add window' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'console-freeze', exact: true }).count()).toBe(1);
    // The week calendar: a window that never closes is one span from now to a week on.
    const calendar = page.getByTestId('window-calendar');
    await expect
      .poll(() => calendar.textContent())
      .toMatch(/console-freeze deny.*\d\d:\d\d–\d\d:\d\d \(next day\)/);
    expect(await calendar.locator('caption').textContent()).toContain('times in Europe/Berlin');
    await page.getByLabel('Show times in').selectOption('America/New_York');
    expect(await calendar.locator('caption').textContent()).toContain('times in America/New_York');
    await expectAccessible();

    // Edit: a new version of the same window; a 3h freeze shows in the table.
    await page.getByRole('button', { name: 'Edit console-freeze' }).click();
    const edit = page.getByRole('form', { name: 'Edit sync window console-freeze' });
    expect(await edit.getByLabel('Clusters').inputValue()).toBe(cluster(1));
    await edit.getByLabel('Duration').fill('3h');
    await edit.getByLabel('Reason').fill('longer freeze');
    await expectAccessible();
    await edit.getByRole('button', { name: 'Save window' }).click();
    await expect.poll(() => edit.count()).toBe(0);
    const windowRow = page
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'console-freeze', exact: true }) });
    await expect.poll(() => windowRow.textContent()).toContain('3h');
    const [edited] = await e2e.fleet.api.request<{ version: number; duration: string }[]>(
      'GET',
      '/api/v1/windows',
    );
    expect(edited).toMatchObject({ version: 2, duration: '3h' });

    await page.getByRole('link', { name: 'Fleet' }).click();
    await expect.poll(() => row(1).textContent(), { timeout: 30_000 }).toContain('WindowClosed');
    expect(await row(1).textContent()).toContain('blocked by window console-freeze');
    // CONSOLE_SCREENSHOT=docs/console.png regenerates the README's picture from this very view.
    if (process.env.CONSOLE_SCREENSHOT) {
      await page.setViewportSize({ width: 1280, height: 640 });
      await page.screenshot({ path: process.env.CONSOLE_SCREENSHOT });
    }
  }, 90_000);

  it('opens a break-glass that lets syncs through, and closes it', async () => {
    await page.getByRole('link', { name: 'Break-glass' }).click();
    const form = page.getByRole('form', { name: 'Open a break-glass' });
    await form.getByLabel('Name', { exact: true }).fill(cluster(1));
    await form.getByLabel('Incident reason').fill('INC-42: hotfix through the freeze');
    await form.getByRole('button', { name: 'Open break-glass' }).click();
    const card = page.getByRole('article').filter({ hasText: 'INC-42' });
    await expect.poll(() => card.textContent()).toContain('active');
    await expectAccessible();

    await page.getByRole('link', { name: 'Fleet' }).click();
    await expect.poll(() => row(1).textContent(), { timeout: 30_000 }).toContain('ManualSyncRequired');

    await page.getByRole('link', { name: 'Break-glass' }).click();
    await card.getByRole('textbox').fill('hotfix shipped');
    await card.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => card.textContent()).toContain('closed');
    expect(await card.textContent()).toContain('hotfix shipped');
    await page.getByRole('link', { name: 'Fleet' }).click();
    await expect.poll(() => row(1).textContent(), { timeout: 30_000 }).toContain('WindowClosed');
  }, 90_000);

  it('rolls a target back by pinning it to a revision it ran, and removes the pin', async () => {
    const v2 = await e2e.head();
    const v3 = await e2e.commitImageTag('v3-console');
    await page.getByRole('link', { name: 'Fleet' }).click();
    await expect.poll(() => row(0).textContent(), { timeout: 60_000 }).toContain(short(v3));
    await row(0).getByRole('link').first().click();
    await page.getByLabel('Reason for the sync').fill('ship v3');
    await page.getByRole('button', { name: 'Sync now' }).click();
    await page.getByRole('button', { name: 'Confirm sync' }).click();
    await expect
      .poll(() => page.getByTestId('synced-revision').textContent(), { timeout: 90_000 })
      .toBe(short(v3));

    const rollback = page.getByRole('form', { name: 'Roll back (pin)' });
    await expect.poll(() => rollback.getByLabel('Revision').inputValue(), { timeout: 30_000 }).toBe(v2);
    await rollback.getByLabel('Reason for the rollback').fill('v3 breaks checkout');
    await rollback.getByRole('button', { name: 'Roll back and pin' }).click();
    await expect
      .poll(() => page.getByTestId('synced-revision').textContent(), { timeout: 90_000 })
      .toBe(short(v2));
    await expect.poll(() => page.getByTestId('target-reason').textContent()).toContain('Pinned');
    expect((await e2e.images())[0]).toMatch(/guestbook-ui:v2-console$/);
    await expectAccessible();

    const unpin = page.getByRole('form', { name: 'Remove the pin' });
    await unpin.getByLabel('Reason to remove the pin').fill('fixed forward');
    await unpin.getByRole('button', { name: 'Remove pin' }).click();
    await expect.poll(() => page.getByRole('form', { name: 'Roll back (pin)' }).count()).toBe(1);
    await expect.poll(() => page.getByTestId('target-reason').textContent()).not.toContain('Pinned');
  }, 240_000);

  it('searches and exports the history, and verifies the audit chain', async () => {
    await page.getByRole('link', { name: 'History' }).click();
    await page.getByLabel('Trigger').selectOption('manual');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect
      .poll(() =>
        page
          .getByRole('row')
          .filter({ hasText: targetOf(0) })
          .count(),
      )
      .toBeGreaterThan(0);
    await expectAccessible();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    const csv = readFileSync(await download.path(), 'utf8').split('\r\n');
    expect(csv[0]).toBe(
      'id,startedAt,finishedAt,target,cluster,appSet,trigger,outcome,revision,bundleDigest,message,reportId',
    );
    const manualRuns = await e2e.fleet.api.request<{ items: unknown[] }>(
      'GET',
      `/api/v1/sync-runs?target=${targetOf(0)}&trigger=manual&outcome=Succeeded`,
    );
    // v2, v3 and the rollback's sync, each exported once.
    expect(manualRuns.items).toHaveLength(3);
    expect(
      csv.filter((l) => l.includes(`,${targetOf(0)},`) && l.includes(',manual,Succeeded,')),
    ).toHaveLength(3);

    await page.getByRole('link', { name: 'Audit' }).click();
    await page.getByLabel('Action prefix').fill('break-glass.');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.getByRole('table').textContent()).toContain('INC-42');
    await page.getByRole('button', { name: 'Verify the chain' }).click();
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Chain' }).textContent())
      .toMatch(/^Chain verified/);
    await expectAccessible();
  }, 90_000);

  it('holds a commit at a rollout gate, and pauses, resumes and promotes it with reasons', async () => {
    await e2e.createAppSet(
      {},
      {
        spec: {
          rollout: { steps: [{ name: 'gate', selector: {}, maxUnavailable: 0, progressDeadline: '10m' }] },
        },
      },
    );
    const v4 = await e2e.commitImageTag('v4-console');
    await nav().getByRole('link', { name: 'ApplicationSets' }).click();
    await page.getByRole('link', { name: 'guestbook', exact: true }).click();
    await expect
      .poll(() => page.getByRole('heading', { name: 'guestbook', level: 1 }).isVisible())
      .toBe(true);
    const status = page.getByTestId('rollout-status');
    const message = page.getByTestId('rollout-message');
    await expect
      .poll(() => message.textContent(), { timeout: 60_000 })
      .toBe('step gate is a manual gate: promote the rollout to release its 2 cluster(s)');
    expect(await page.getByRole('region', { name: 'Rollout' }).textContent()).toContain(short(v4));
    expect(await page.getByTestId('rollout-steps').locator('[aria-current="step"]').textContent()).toMatch(
      /^gate — current/,
    );
    await expect
      .poll(() => page.getByTestId('generator-summary').textContent())
      .toBe('2 targets. The stored targets match.');
    await expectAccessible();

    const pause = page.getByRole('form', { name: 'Pause the rollout' });
    await pause.getByLabel('Reason to pause').fill('watching the canary dashboards');
    await pause.getByRole('button', { name: 'Pause' }).click();
    await expect.poll(() => status.textContent()).toContain('Paused');
    expect(await message.textContent()).toContain('watching the canary dashboards');
    const resume = page.getByRole('form', { name: 'Resume the rollout' });
    await resume.getByLabel('Reason to resume').fill('dashboards are fine');
    await resume.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => status.textContent()).toContain('Progressing');
    const promote = page.getByRole('form', { name: 'Promote the rollout' });
    await promote.getByLabel('Reason to promote').fill('ship v4');
    await promote.getByRole('button', { name: 'Promote' }).click();
    // Released to both: each row of the rollout's table says v4 with the time it went.
    const rolloutTable = page.getByRole('table', { name: 'Targets in the rollout' });
    await expect
      .poll(async () => (await rolloutTable.getByRole('row').allTextContents()).slice(1), { timeout: 30_000 })
      .toEqual([expect.stringContaining(short(v4)), expect.stringContaining(short(v4))]);
    const audit = await e2e.fleet.api.request<{ items: { action: string; details: { reason?: string } }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:guestbook&action=rollout.',
    );
    expect(
      audit.items
        .filter((e) => ['rollout.paused', 'rollout.resumed', 'rollout.promoted'].includes(e.action))
        .map((e) => [e.action, e.details.reason]),
    ).toEqual([
      ['rollout.promoted', 'ship v4'],
      ['rollout.resumed', 'dashboards are fine'],
      ['rollout.paused', 'watching the canary dashboards'],
    ]);
  }, 120_000);

  it('shows a deletion the guard holds, and confirms it with a reason', async () => {
    await e2e.createAppSet({}, { clusters: [0], spec: { deletionGuard: { maxDeletePercent: 10 } } });
    await expect
      .poll(
        async () => (await e2e.fleet.api.request<AppSetView>('GET', '/api/v1/appsets/guestbook')).status,
        {
          timeout: 60_000,
        },
      )
      .toBe('Held');
    // A hold changes no target, so no live event brings it: it shows when the view is opened.
    await nav().getByRole('link', { name: 'ApplicationSets' }).click();
    await expect
      .poll(() => page.getByRole('row').filter({ hasText: 'guestbook' }).textContent())
      .toContain('deletion held for confirmation');
    await page.getByRole('link', { name: 'guestbook', exact: true }).click();
    const guard = page.getByTestId('deletion-guard');
    // The view shows what it had cached, then what it refetched on opening.
    await expect.poll(() => guard.count(), { timeout: 15_000 }).toBe(1);
    expect(await guard.textContent()).toContain(`Would delete (1): ${targetOf(1)}`);
    expect(await page.getByTestId('appset-status').textContent()).toContain('Held');
    await expect
      .poll(() => page.getByTestId('generator-summary').textContent())
      .toMatch(
        /^1 targets\. An expansion now would create 0, update 0, move 0 and delete 1, and the deletion guard would hold it/,
      );
    await expectAccessible();
    const confirm = guard.getByRole('form', { name: 'Confirm the held expansion' });
    const reason = confirm.getByLabel('Reason to let these targets go');
    // Without a reason the button stays disabled: nothing can be sent.
    expect(await confirm.getByRole('button', { name: 'Confirm deletion' }).isDisabled()).toBe(true);
    await reason.fill('retiring the staging cluster');
    await confirm.getByRole('button', { name: 'Confirm deletion' }).click();
    await expect.poll(() => guard.count(), { timeout: 30_000 }).toBe(0);
    expect(await page.getByTestId('appset-status').textContent()).not.toContain('Held');
    const audit = await e2e.fleet.api.request<{ items: { actor: string; details: unknown }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:guestbook&action=appset.expansion-confirmed',
    );
    expect(audit.items).toHaveLength(1);
    expect(audit.items[0]).toMatchObject({
      actor: 'user:admin',
      details: { reason: 'retiring the staging cluster', deleted: [targetOf(1)] },
    });
  }, 120_000);

  it("shows the generators' output of the newest expansion without a reload, and catches up after the stream drops", async () => {
    // Still on guestbook, now one target (the deletion confirmed above), generated at the head.
    const generated = page.getByRole('table', { name: 'Targets the generators make' });
    const summary = page.getByTestId('generator-summary');
    // The output is asked again when an event names the appset: one may come while the expansion
    // still writes (the new revision generated, "would update" 1), the next once it is stored.
    const matched = () =>
      expect
        .poll(() => summary.textContent(), { timeout: 30_000 })
        .toBe('1 targets. The stored targets match.');
    await matched();
    expect(await generated.textContent()).toContain(short(await e2e.head()));

    // A commit is expanded while the view is open: the stream names the appset, and its output is
    // asked again — the new revision, and nothing left for an expansion to do.
    const v5 = await e2e.commitImageTag('v5-console');
    await expect.poll(() => generated.textContent(), { timeout: 60_000 }).toContain(short(v5));
    await matched();

    // The stream drops as soon as it connects (a proxy cutting it), so no event names the appset
    // when the next commit is expanded: each reconnect catches up on what the view shows.
    await page.route('**/api/v1/events', (route) =>
      route.fulfill({ status: 200, contentType: 'text/event-stream', body: ': connected\n\n' }),
    );
    await page.reload();
    await matched();
    expect(await generated.textContent()).toContain(short(v5));
    const v6 = await e2e.commitImageTag('v6-console');
    await expect
      .poll(async () => (await e2e.fleet.api.targets()).map((t) => t.desiredRevision), { timeout: 60_000 })
      .toEqual([v6]);
    await expect.poll(() => generated.textContent(), { timeout: 30_000 }).toContain(short(v6));
    await matched();
    await page.unroute('**/api/v1/events');
    await expectAccessible();
  }, 150_000);

  it('ran no script from any name it showed', () => {
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
