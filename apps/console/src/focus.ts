import { useLayoutEffect, useRef, type FocusEvent, type RefObject } from 'react';

/**
 * Keeps keyboard focus in a region whose controls come and go with its data (a rollout's Promote
 * form goes away once the last step is promoted). When a render removed the control that had focus,
 * the browser leaves focus on the page body, and a keyboard user would start again from the top:
 * focus moves to `fallback` instead (a heading with `tabIndex={-1}`). Only a removed control counts,
 * so focus a person moved elsewhere on purpose (a click on the page) is left alone.
 *
 * Returns the region's `onFocus` handler, which remembers the control that last had focus in it.
 */
export function useFocusRescue(fallback: RefObject<HTMLElement | null>): (e: FocusEvent) => void {
  const lastFocused = useRef<Element | null>(null);
  useLayoutEffect(() => {
    const control = lastFocused.current;
    const lost = document.activeElement === null || document.activeElement === document.body;
    if (control && !control.isConnected && lost) {
      lastFocused.current = null;
      fallback.current?.focus();
    }
  });
  return (e) => {
    lastFocused.current = e.target;
  };
}
