import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';
import {
  hasChromium,
  launchChromium,
  newWatchedPage,
  seriousAccessibilityViolations,
} from '../support/browser.js';
import { focusedOutside, isFocused, tabTo, typeInto } from '../support/keyboard.js';

const ADMIN_TOKEN = 'console-keyboard-admin-token-0123456789abcdef';

/**
 * The console's main controls driven with the keyboard only, in Debian's Chromium against a real
 * fleet: a control is reached with Tab or Shift+Tab (and must show its focus), activated with Enter
 * or Space, and a dialog is left with Escape. No click, no `fill`: what a mouse-free person can do.
 */
describe.skipIf(!hasChromium)('the web console from the keyboard', () => {
  let e2e: GuestbookFleet;
  let browser: Browser;
  let page: Page;
  let dialogs: string[];
  let pageErrors: string[];
  const cluster = (i: number) => e2e.fleet.clusters[i]!.name;
  const targetOf = (i: number) => `${cluster(i)}-guestbook`;
  const row = (i: number) =>
    page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: cluster(i) }) });
  const navLink = (name: string) =>
    page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name });
  const main = () => page.getByRole('main');
  const heading = (name: string) => page.getByRole('heading', { name, level: 1 });
  const expectAccessible = async () => expect(await seriousAccessibilityViolations(page)).toEqual([]);
  /** Back up to the navigation (it comes before the view) and follow one of its links with Enter. */
  const goTo = async (view: string, title: string) => {
    await tabTo(page, navLink(view), { backwards: true });
    await page.keyboard.press('Enter');
    await expect.poll(() => heading(title).isVisible()).toBe(true);
    // The new view's content takes focus, so Tab goes on from where it starts.
    expect(await isFocused(main())).toBe(true);
  };

  // A poll ends as soon as it sees what it waits for; 10 s leaves room on shared cores.
  beforeAll(() => vi.setConfig({ expect: { poll: { timeout: 10_000 } } }));
  afterAll(() => vi.resetConfig());
  beforeAll(async () => {
    e2e = await GuestbookFleet.start({
      name: 'console-kb',
      clusters: 2,
      pollSeconds: 1,
      hubEnv: { FLOTILLA_ADMIN_TOKEN: ADMIN_TOKEN },
      labels: (i): Record<string, string> => ({ env: i === 0 ? 'prod' : 'staging' }),
    });
    await e2e.createAppSet({});
    browser = await launchChromium();
    ({ page, dialogs, pageErrors } = await newWatchedPage(browser));
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await e2e?.stop();
  }, 60_000);

  it('signs in, skips to the content and moves between views', async () => {
    await page.goto(`${e2e.fleet.hubUrl}/`);
    await expect
      .poll(() => page.getByRole('heading', { name: 'Sign in to Flotilla' }).isVisible())
      .toBe(true);
    await typeInto(page, page.getByLabel('API token'), ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await expect.poll(() => heading('Fleet').isVisible()).toBe(true);

    await tabTo(page, page.getByRole('link', { name: 'Skip to content' }));
    await page.keyboard.press('Enter');
    expect(await isFocused(main())).toBe(true);
    await goTo('Windows', 'Sync windows');
    await goTo('History', 'Sync history');
    await goTo('Fleet', 'Fleet');
  }, 60_000);

  it('filters the fleet by label: type, then Apply', async () => {
    await expect.poll(() => row(0).textContent(), { timeout: 60_000 }).toContain('ManualSyncRequired');
    await typeInto(page, page.getByLabel('Cluster labels'), 'env=prod');
    await tabTo(page, page.getByRole('button', { name: 'Apply filters' }));
    await page.keyboard.press('Space');
    await expect.poll(() => page.getByTestId('fleet-counts').textContent()).toMatch(/^1 clusters/);
    expect(await row(1).count()).toBe(0);
    expect(page.url()).toContain('selector=env%3Dprod');
  }, 90_000);

  it('opens a target; Escape cancels the sync confirmation, Enter confirms it', async () => {
    await tabTo(page, row(0).getByRole('link').first());
    await page.keyboard.press('Enter');
    await expect.poll(() => heading(targetOf(0)).isVisible()).toBe(true);
    expect(await isFocused(main())).toBe(true);

    await typeInto(page, page.getByLabel('Reason for the sync'), 'synced from the keyboard');
    const syncNow = page.getByRole('button', { name: 'Sync now' });
    await tabTo(page, syncNow);
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('dialog', { name: `Sync ${targetOf(0)}?` });
    await expect.poll(() => confirm.isVisible()).toBe(true);
    // Focus starts on Cancel, so a habitual Enter changes nothing.
    expect(await isFocused(confirm.getByRole('button', { name: 'Cancel' }))).toBe(true);
    expect(await confirm.textContent()).toContain('Reason: synced from the keyboard');
    await expectAccessible();
    // The page behind is inert: Tab goes round the dialog (and the browser's own UI), never behind it.
    for (let presses = 0; presses < 4; presses++) {
      await page.keyboard.press('Tab');
      expect(await focusedOutside(confirm)).toBe(0);
    }
    await tabTo(page, confirm.getByRole('button', { name: 'Cancel' }), { limit: 4 });
    await page.keyboard.press('Escape');
    await expect.poll(() => confirm.isVisible()).toBe(false);
    expect(await isFocused(syncNow)).toBe(true);
    expect(await e2e.operations(targetOf(0))).toEqual([]);

    await page.keyboard.press('Space');
    await expect.poll(() => confirm.isVisible()).toBe(true);
    await tabTo(page, confirm.getByRole('button', { name: 'Confirm sync' }), { backwards: true, limit: 2 });
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Sync requested' }).count()).toBe(1);
    expect(await isFocused(syncNow)).toBe(true);
    expect((await e2e.operations(targetOf(0))).map((o) => o.reason)).toEqual(['synced from the keyboard']);
  }, 90_000);

  it('adds a deny window, and its edit form takes focus and gives it back', async () => {
    await goTo('Windows', 'Sync windows');
    const add = page.getByRole('form', { name: 'Add a sync window' });
    await typeInto(page, add.getByLabel('Name', { exact: true }), 'kb-freeze');
    await typeInto(page, add.getByLabel('Schedule'), '* * * * *');
    await typeInto(page, add.getByLabel('Duration'), '2h');
    await typeInto(page, add.getByLabel('Time zone'), 'Europe/Berlin');
    await typeInto(page, add.getByLabel('Clusters'), cluster(1));
    await typeInto(page, add.getByLabel('Reason'), 'freeze set from the keyboard');
    await page.keyboard.press('Enter');
    const windowRow = page
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'kb-freeze', exact: true }) });
    await expect.poll(() => windowRow.textContent()).toContain('2h');

    const editButton = page.getByRole('button', { name: 'Edit kb-freeze' });
    const edit = page.getByRole('form', { name: 'Edit sync window kb-freeze' });
    await tabTo(page, editButton, { backwards: true });
    await page.keyboard.press('Enter');
    await expect.poll(() => edit.count()).toBe(1);
    expect(await isFocused(edit.getByLabel('Kind'))).toBe(true);
    await typeInto(page, edit.getByLabel('Duration'), '3h');
    await expectAccessible();
    // Escape drops the edit: focus back on its button, the window unchanged.
    await page.keyboard.press('Escape');
    await expect.poll(() => edit.count()).toBe(0);
    expect(await isFocused(editButton)).toBe(true);
    expect(await windowRow.textContent()).toContain('2h');

    await page.keyboard.press('Enter');
    await expect.poll(() => edit.count()).toBe(1);
    await typeInto(page, edit.getByLabel('Duration'), '3h');
    await typeInto(page, edit.getByLabel('Reason'), 'longer freeze');
    await tabTo(page, edit.getByRole('button', { name: 'Save window' }));
    await page.keyboard.press('Enter');
    await expect.poll(() => edit.count()).toBe(0);
    expect(await isFocused(editButton)).toBe(true);
    await expect.poll(() => windowRow.textContent()).toContain('3h');

    await goTo('Fleet', 'Fleet');
    await expect
      .poll(() => row(1).textContent(), { timeout: 30_000 })
      .toContain('blocked by window kb-freeze');
  }, 90_000);

  it('opens a break-glass and closes it', async () => {
    await goTo('Break-glass', 'Break-glass');
    const open = page.getByRole('form', { name: 'Open a break-glass' });
    await typeInto(page, open.getByLabel('Name', { exact: true }), cluster(1));
    await typeInto(page, open.getByLabel('Incident reason'), 'INC-7: a fix from the keyboard');
    await tabTo(page, open.getByRole('button', { name: 'Open break-glass' }));
    await page.keyboard.press('Enter');
    const card = page.getByRole('article').filter({ hasText: 'INC-7' });
    await expect.poll(() => card.textContent()).toContain('active');

    await typeInto(page, card.getByRole('textbox'), 'fix shipped');
    await page.keyboard.press('Enter');
    await expect.poll(() => card.textContent()).toContain('closed');
    expect(await card.textContent()).toContain('fix shipped');
    // The close form went away with the override's activity: focus is on the override's heading.
    expect(await isFocused(card.getByRole('heading'))).toBe(true);
  }, 60_000);

  it('filters and exports the history, and verifies the audit chain', async () => {
    await goTo('History', 'Sync history');
    const trigger = page.getByLabel('Trigger');
    await tabTo(page, trigger);
    // A closed select takes typed letters: "manual" picks that option.
    await page.keyboard.type('manual');
    expect(await trigger.inputValue()).toBe('manual');
    await tabTo(page, page.getByRole('button', { name: 'Apply filters' }));
    await page.keyboard.press('Enter');
    expect(page.url()).toContain('trigger=manual');
    await expect
      .poll(
        () =>
          page
            .getByRole('row')
            .filter({ hasText: targetOf(0) })
            .count(),
        { timeout: 60_000 },
      )
      .toBeGreaterThan(0);

    await tabTo(page, page.getByRole('button', { name: 'Export CSV' }));
    const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
    const csv = readFileSync(await download.path(), 'utf8').split('\r\n');
    expect(csv[0]).toMatch(/^id,startedAt,finishedAt,target,cluster,appSet,trigger,outcome,/);
    expect(csv.filter((l) => l.includes(`,${targetOf(0)},`) && l.includes(',manual,'))).toHaveLength(1);

    await goTo('Audit', 'Audit log');
    await typeInto(page, page.getByLabel('Action prefix'), 'break-glass.');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('table').textContent()).toContain('INC-7');
    await tabTo(page, page.getByRole('button', { name: 'Verify the chain' }));
    await page.keyboard.press('Space');
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'Chain' }).textContent())
      .toMatch(/^Chain verified/);
  }, 120_000);

  it('pauses and resumes a rollout held at a gate; the reason field keeps focus', async () => {
    await e2e.createAppSet(
      {},
      {
        spec: {
          rollout: { steps: [{ name: 'gate', selector: {}, maxUnavailable: 0, progressDeadline: '10m' }] },
        },
      },
    );
    await e2e.commitImageTag('v2-keyboard');
    await goTo('ApplicationSets', 'ApplicationSets');
    await tabTo(page, page.getByRole('link', { name: 'guestbook', exact: true }));
    await page.keyboard.press('Enter');
    await expect.poll(() => heading('guestbook').isVisible()).toBe(true);
    const status = page.getByTestId('rollout-status');
    await expect
      .poll(() => page.getByTestId('rollout-message').textContent(), { timeout: 60_000 })
      .toContain('step gate is a manual gate');

    await typeInto(page, page.getByLabel('Reason to pause'), 'watching the dashboards');
    await page.keyboard.press('Enter');
    await expect.poll(() => status.textContent()).toContain('Paused');
    // The form turned into Resume around the focused field: type on, no Tab needed.
    expect(await isFocused(page.getByLabel('Reason to resume'))).toBe(true);
    await page.keyboard.type('dashboards are fine');
    await page.keyboard.press('Enter');
    await expect.poll(() => status.textContent()).toContain('Progressing');
    expect(await isFocused(page.getByLabel('Reason to pause'))).toBe(true);
    const audit = await e2e.fleet.api.request<{ items: { action: string; details: { reason?: string } }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:guestbook&action=rollout.',
    );
    expect(
      audit.items
        .filter((e) => ['rollout.paused', 'rollout.resumed'].includes(e.action))
        .map((e) => [e.action, e.details.reason]),
    ).toEqual([
      ['rollout.resumed', 'dashboards are fine'],
      ['rollout.paused', 'watching the dashboards'],
    ]);
  }, 120_000);

  it('opened no script dialog and threw no error', () => {
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
