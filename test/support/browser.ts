import { existsSync } from 'node:fs';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it when missing). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/**
 * Headless Chromium that talks to nothing but loopback: no sandbox (containers have no user
 * namespaces), no GPU, and none of the background traffic (updates, sync, safe browsing, QUIC).
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
      '--no-default-browser-check',
      '--metrics-recording-only',
      '--safebrowsing-disable-auto-update',
    ],
  });
}

/** axe-core's serious and critical findings on the page as it is now (WCAG 2.x A and AA). */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** A page whose script dialogs (dismissed) and uncaught errors are kept, for a spec to assert none. */
export interface WatchedPage {
  page: Page;
  /** Messages of `alert`/`confirm`/`prompt` the page opened: a name run as script would show here. */
  dialogs: string[];
  pageErrors: string[];
}

/** A page in a new context of `browser` (downloads accepted) that records dialogs and errors. */
export async function newWatchedPage(
  browser: Browser,
  options: BrowserContextOptions = {},
): Promise<WatchedPage> {
  const context = await browser.newContext({ acceptDownloads: true, ...options });
  const watched: WatchedPage = { page: await context.newPage(), dialogs: [], pageErrors: [] };
  watched.page.on('dialog', (d) => {
    watched.dialogs.push(d.message());
    void d.dismiss();
  });
  watched.page.on('pageerror', (e) => watched.pageErrors.push(e.message));
  return watched;
}
