import type { Locator, Page } from 'playwright-core';

// What runs in the page is given as source text, as in test/perf: test code has no DOM typings.
// Focus is read with the `:focus` selector.

/** Whether `control` has keyboard focus now. */
export async function isFocused(control: Locator): Promise<boolean> {
  return (await control.and(control.page().locator(':focus')).count()) === 1;
}

/** How many focused elements the page has outside `container` (0 or 1; 0 while a modal has focus). */
export async function focusedOutside(container: Locator): Promise<number> {
  const page = container.page();
  return (await page.locator(':focus').count()) - (await container.locator(':focus').count());
}

/** What has focus, for a failure message: its tag and name. */
function describeFocus(page: Page): Promise<string> {
  return page.evaluate<string>(`(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return 'nothing (the page body)';
    const name = el.getAttribute('aria-label') ?? el.textContent ?? '';
    return '<' + el.tagName.toLowerCase() + '> "' + name.trim().slice(0, 60) + '"';
  })()`);
}

/**
 * Whether the focused element shows that it has focus: it matches `:focus-visible` (as after a key
 * press) and its style draws an outline there.
 */
export function focusIsVisible(page: Page): Promise<boolean> {
  return page.evaluate<boolean>(`(() => {
    const el = document.activeElement;
    if (!el || el === document.body || !el.matches(':focus-visible')) return false;
    const style = getComputedStyle(el);
    return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
  })()`);
}

/**
 * Presses Tab (Shift+Tab with `backwards`) until `control` has focus, as a keyboard user reaches
 * it, then checks that the focus shows. Fails naming where focus ended when `limit` presses never
 * reach it: the control is not in the tab order (a clickable div, a negative tabindex, hidden).
 */
export async function tabTo(
  page: Page,
  control: Locator,
  { backwards = false, limit = 100 }: { backwards?: boolean; limit?: number } = {},
): Promise<void> {
  const key = backwards ? 'Shift+Tab' : 'Tab';
  for (let presses = 0; presses < limit; presses++) {
    await page.keyboard.press(key);
    if (await isFocused(control)) {
      if (!(await focusIsVisible(page)))
        throw new Error(`${String(control)} has focus but shows no focus indicator`);
      return;
    }
  }
  throw new Error(
    `${limit} × ${key} never reached ${String(control)}; focus is on ${await describeFocus(page)}`,
  );
}

/** Reaches a text field with Tab and replaces what it holds with `text`, keys only. */
export async function typeInto(
  page: Page,
  field: Locator,
  text: string,
  options: { backwards?: boolean } = {},
): Promise<void> {
  await tabTo(page, field, options);
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type(text);
}
