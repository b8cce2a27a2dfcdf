import { readFileSync } from 'node:fs';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';
import {
  hasChromium,
  launchChromium,
  newWatchedPage,
  seriousAccessibilityViolations,
} from '../support/browser.js';
import { focusedOutside, focusIsVisible, isFocused, tabTo, typeInto } from '../support/keyboard.js';
import { LocalOidcIssuer, OIDC_PERSON_SHOWN_AS } from '../support/oidc-issuer.js';

const ADMIN_TOKEN = 'console-keyboard-admin-token-0123456789abcdef';

/**
 * The console's main controls driven with the keyboard only, in Debian's Chromium against a real
 * fleet: a control is reached with Tab or Shift+Tab (and must show its focus), activated with Enter
 * or Space, and a dialog is left with Escape. No click, no `fill`: what a mouse-free person can do.
 * Where a control goes away with what it did (a sign-in form, a held deletion, a finished rollout's
 * controls), focus must land on something visible that says what happened, never on the page body.
 */
describe.skipIf(!hasChromium)('the web console from the keyboard', () => {
  let e2e: GuestbookFleet;
  let idp: LocalOidcIssuer;
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
  /** `control` has focus, and shows it (focus moved there by the console, not by Tab). */
  const expectFocusShownOn = async (control: Locator) => {
    expect(await isFocused(control)).toBe(true);
    expect(await focusIsVisible(page)).toBe(true);
  };
  /** Back up to the navigation (it comes before the view) and follow one of its links with Enter. */
  const goTo = async (view: string, title: string) => {
    await tabTo(page, navLink(view), { backwards: true });
    await page.keyboard.press('Enter');
    await expect.poll(() => heading(title).isVisible()).toBe(true);
    // The new view's content takes focus, so Tab goes on from where it starts.
    await expectFocusShownOn(main());
  };

  // A poll ends as soon as it sees what it waits for; 10 s leaves room on shared cores.
  beforeAll(() => vi.setConfig({ expect: { poll: { timeout: 10_000 } } }));
  afterAll(() => vi.resetConfig());
  beforeAll(async () => {
    // The hub also signs people in with OIDC (the last test), so its sign-in page offers both.
    idp = await LocalOidcIssuer.start();
    e2e = await GuestbookFleet.start({
      name: 'console-kb',
      clusters: 2,
      pollSeconds: 1,
      hubEnv: { FLOTILLA_ADMIN_TOKEN: ADMIN_TOKEN, ...idp.hubEnv() },
      labels: (i): Record<string, string> => ({ env: i === 0 ? 'prod' : 'staging' }),
    });
    await e2e.createAppSet({});
    browser = await launchChromium();
    ({ page, dialogs, pageErrors } = await newWatchedPage(browser));
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await e2e?.stop();
    await idp?.close();
  }, 60_000);

  it('signs in, skips to the content and moves between views', async () => {
    await page.goto(`${e2e.fleet.hubUrl}/`);
    await expect
      .poll(() => page.getByRole('heading', { name: 'Sign in to Flotilla' }).isVisible())
      .toBe(true);
    await typeInto(page, page.getByLabel('API token'), ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await expect.poll(() => heading('Fleet').isVisible()).toBe(true);
    // The sign-in form went away with the field that had focus: the first view's content has it.
    await expectFocusShownOn(main());

    await tabTo(page, page.getByRole('link', { name: 'Skip to content' }), { backwards: true });
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
    // Auto-synced, so a released target syncs by itself and the next test's steps can complete.
    await e2e.createAppSet(undefined, {
      spec: {
        // Two manual gates: the prod cluster, then the rest (promoting the first leaves a step to go).
        rollout: {
          steps: [
            {
              name: 'gate',
              selector: { matchLabels: { env: 'prod' } },
              maxUnavailable: 0,
              progressDeadline: '10m',
            },
            { name: 'rest', selector: {}, maxUnavailable: 0, progressDeadline: '10m' },
          ],
        },
      },
    });
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

  it('promotes the rollout a step at a time; focus stays on Promote, then goes to the Rollout heading', async () => {
    // The deny window added above would hold the second step's cluster until the step's deadline.
    await e2e.fleet.api.request('DELETE', '/api/v1/windows/kb-freeze?reason=rollout%20test');
    const status = page.getByTestId('rollout-status');
    const currentStep = page.getByTestId('rollout-steps').locator('[aria-current="step"]');
    const promote = page.getByRole('button', { name: 'Promote', exact: true });
    await typeInto(page, page.getByLabel('Reason to promote'), 'prod canary looks fine');
    await tabTo(page, promote);
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.getByTestId('rollout-message').textContent(), { timeout: 90_000 })
      .toContain('step rest is a manual gate');
    expect(await currentStep.textContent()).toMatch(/^rest — current/);
    // The form stayed, emptied for the next step: its button kept the focus (aria-disabled, not disabled).
    await expectFocusShownOn(promote);
    expect(await promote.getAttribute('aria-disabled')).toBe('true');

    await typeInto(page, page.getByLabel('Reason to promote'), 'ship it everywhere', { backwards: true });
    await page.keyboard.press('Enter');
    await expect.poll(() => status.textContent(), { timeout: 90_000 }).toContain('Completed');
    // A completed rollout has no controls: focus went from the removed field to the section's heading.
    expect(await page.getByLabel('Reason to promote').count()).toBe(0);
    await expectFocusShownOn(page.getByRole('heading', { name: 'Rollout', level: 2 }));
    const audit = await e2e.fleet.api.request<{ items: { action: string; details: { reason?: string } }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:guestbook&action=rollout.promoted',
    );
    expect(audit.items.map((e) => e.details.reason)).toEqual([
      'ship it everywhere',
      'prod canary looks fine',
    ]);
  }, 240_000);

  it('confirms a held deletion with a reason; the outcome takes focus and is announced', async () => {
    await e2e.createAppSet({}, { clusters: [0], spec: { deletionGuard: { maxDeletePercent: 10 } } });
    await expect
      .poll(
        async () =>
          (await e2e.fleet.api.request<{ status: string }>('GET', '/api/v1/appsets/guestbook')).status,
        {
          timeout: 60_000,
        },
      )
      .toBe('Held');
    // A hold changes no target, so no live event brings it: it shows when the view is opened again.
    await goTo('ApplicationSets', 'ApplicationSets');
    await tabTo(page, page.getByRole('link', { name: 'guestbook', exact: true }));
    await page.keyboard.press('Enter');
    const guard = page.getByTestId('deletion-guard');
    await expect.poll(() => guard.count(), { timeout: 15_000 }).toBe(1);
    expect(await guard.textContent()).toContain(`Would delete (1): ${targetOf(1)}`);
    const confirm = guard.getByRole('form', { name: 'Confirm the held expansion' });
    await typeInto(page, confirm.getByLabel('Reason to let these targets go'), 'retiring staging');
    const button = confirm.getByRole('button', { name: 'Confirm deletion' });
    await tabTo(page, button);
    await expectAccessible();
    await page.keyboard.press('Enter');

    const outcome = page.getByRole('status').filter({ hasText: 'Deletion confirmed' });
    await expect
      .poll(() => outcome.textContent())
      .toBe(`Deletion confirmed: 1 target(s) let go (${targetOf(1)}); guestbook now has 1.`);
    await expectFocusShownOn(outcome);
    await expect.poll(() => guard.count(), { timeout: 30_000 }).toBe(0);
    // The held section (and its form) went away: focus is still on the outcome, not the page body.
    await expectFocusShownOn(outcome);
    const audit = await e2e.fleet.api.request<{ items: { details: unknown }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:guestbook&action=appset.expansion-confirmed',
    );
    expect(audit.items.map((e) => e.details)).toEqual([
      expect.objectContaining({ reason: 'retiring staging', deleted: [targetOf(1)] }),
    ]);
  }, 120_000);

  it('pages the audit log with Next and Previous; focus stays on the pressed button', async () => {
    // Tokens made through the API up to 55 `token.created` events: a page of 50 and one of 5.
    const made = await e2e.fleet.api.request<{ items: unknown[] }>(
      'GET',
      '/api/v1/audit?action=token.created&limit=100',
    );
    // One at a time: each is a transaction on the audit chain, on a machine shared with other work.
    for (let i = made.items.length; i < 55; i++)
      await e2e.fleet.api.request('POST', '/api/v1/tokens', {
        name: `kb-page-${i}`,
        role: 'viewer',
        expiresInDays: 1,
      });
    await goTo('Audit', 'Audit log');
    await typeInto(page, page.getByLabel('Action prefix'), 'token.created');
    await page.keyboard.press('Enter');
    const rows = page.getByRole('table').getByRole('row').filter({ hasText: 'token.created' });
    const pageNumber = page.getByTestId('page-number');
    await expect.poll(() => rows.count()).toBe(50);
    const pages = page.getByRole('navigation', { name: 'Pages' });
    const next = pages.getByRole('button', { name: 'Next' });
    const previous = pages.getByRole('button', { name: 'Previous' });
    expect(await previous.getAttribute('aria-disabled')).toBe('true');

    await tabTo(page, next);
    await page.keyboard.press('Enter');
    await expect.poll(() => rows.count()).toBe(5);
    expect(await pageNumber.textContent()).toBe('Page 2');
    // The last page: Next says it does not apply, and still has the focus that pressed it.
    expect(await next.getAttribute('aria-disabled')).toBe('true');
    await expectFocusShownOn(next);
    await page.keyboard.press('Enter');
    expect(await pageNumber.textContent()).toBe('Page 2');
    expect(new URL(page.url()).searchParams.getAll('page')).toHaveLength(1);

    await tabTo(page, previous, { backwards: true, limit: 2 });
    await page.keyboard.press('Space');
    await expect.poll(() => rows.count()).toBe(50);
    expect(await pageNumber.textContent()).toBe('Page 1');
    expect(await previous.getAttribute('aria-disabled')).toBe('true');
    await expectFocusShownOn(previous);
    expect(await next.getAttribute('aria-disabled')).toBe('false');
    await expectAccessible();
  }, 240_000);

  it('signs out, then in with OIDC from the keyboard; focus starts on the first view', async () => {
    await tabTo(page, page.getByRole('button', { name: 'Sign out' }), { backwards: true });
    await page.keyboard.press('Enter');
    // The button went away with the signed-in console: focus is on the sign-in page's heading.
    const signInHeading = page.getByRole('heading', { name: 'Sign in to Flotilla' });
    await expect.poll(() => signInHeading.isVisible()).toBe(true);
    await expectFocusShownOn(signInHeading);
    const oidc = page.getByRole('button', { name: idp.buttonName });
    await tabTo(page, oidc);
    await page.keyboard.press('Enter');
    // To the issuer and back (it signs the one person in at once), then the page the person was on.
    await expect.poll(() => page.getByText(OIDC_PERSON_SHOWN_AS).isVisible(), { timeout: 30_000 }).toBe(true);
    await expect.poll(() => heading('Audit log').isVisible()).toBe(true);
    await expectFocusShownOn(main());
    expect(idp.trades).toEqual([{ ok: true }]);
  }, 60_000);

  it('opened no script dialog and threw no error', () => {
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
