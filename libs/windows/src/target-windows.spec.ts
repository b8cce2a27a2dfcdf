import { describe, expect, it } from 'vitest';
import { targetWindowStatus, windowsForTarget, type NamedSyncWindow } from './target-windows.js';
import { validateWindows } from './validate-windows.js';

function named(name: string, input: Record<string, unknown>): NamedSyncWindow {
  const [window] = validateWindows([input]);
  return { name, window: window as NamedSyncWindow['window'] };
}

const target = { application: 'eu-1-guestbook', namespace: 'guestbook', cluster: 'eu-1' };

// Every day 22:00-06:00 UTC no automatic change; weekdays 09:00-17:00 Paris time is the allow window.
const night = named('night-freeze', {
  kind: 'deny',
  schedule: '0 22 * * *',
  duration: '8h',
  clusters: ['eu-*'],
});
const office = named('office-hours', {
  kind: 'allow',
  schedule: '0 9 * * 1-5',
  duration: '8h',
  timeZone: 'Europe/Paris',
  namespaces: ['guestbook'],
  manualSync: true,
});
const usOnly = named('us-only', { kind: 'deny', schedule: '* * * * *', duration: '1h', clusters: ['us-*'] });
const andWindow = named('and-both', {
  kind: 'deny',
  schedule: '* * * * *',
  duration: '1h',
  clusters: ['eu-*'],
  applications: ['other-*'],
  andOperator: true,
});

describe('windowsForTarget', () => {
  it('keeps the windows whose selectors pick the target (OR, and AND on request), in name order', () => {
    const picked = windowsForTarget([usOnly, office, andWindow, night], target);
    expect(picked.map((w) => w.name)).toEqual(['night-freeze', 'office-hours']);
  });

  it('gives the same list whatever order the windows come in', () => {
    expect(windowsForTarget([night, office], target)).toEqual(windowsForTarget([office, night], target));
  });

  it('gives nothing when no window concerns the target', () => {
    expect(windowsForTarget([usOnly, andWindow], target)).toEqual([]);
  });

  it("scoped to projects, a window governs only those projects' targets, whatever its selectors pick", () => {
    const paymentsFreeze = { ...night, name: 'payments-freeze', projects: ['payments'] };
    expect(
      windowsForTarget([paymentsFreeze, office], { ...target, project: 'payments' }).map((w) => w.name),
    ).toEqual(['office-hours', 'payments-freeze']);
    expect(
      windowsForTarget([paymentsFreeze, office], { ...target, project: 'web' }).map((w) => w.name),
    ).toEqual(['office-hours']);
    // Not knowing the target's project, only unscoped windows apply.
    expect(windowsForTarget([paymentsFreeze], target)).toEqual([]);
    // An empty list is no scope at all.
    expect(windowsForTarget([{ ...night, projects: [] }], { ...target, project: 'web' })).toHaveLength(1);
    expect(
      targetWindowStatus([paymentsFreeze], { ...target, project: 'web' }, new Date('2026-03-10T23:00:00Z'))
        .canSync,
    ).toBe(true);
    expect(
      targetWindowStatus(
        [paymentsFreeze],
        { ...target, project: 'payments' },
        new Date('2026-03-10T23:00:00Z'),
      ).canSync,
    ).toBe(false);
  });
});

describe('targetWindowStatus', () => {
  it('inside the allow window on a weekday: may sync, closes at 17:00 Paris', () => {
    // Wednesday 2026-12-02 10:00 UTC = 11:00 Paris (CET, UTC+1).
    const s = targetWindowStatus([night, office, usOnly], target, new Date('2026-12-02T10:00:00Z'));
    expect(s).toEqual({
      matching: ['night-freeze', 'office-hours'],
      active: ['office-hours'],
      canSync: true,
      canSyncManually: true,
      nextOpen: new Date('2026-12-02T10:00:00Z'),
      nextClose: new Date('2026-12-02T16:00:00Z'),
    });
  });

  it('under the deny window at night: pending, eligible when the office window opens', () => {
    // Wednesday 23:00 UTC: the night freeze is active and the allow window is closed.
    const s = targetWindowStatus([night, office], target, new Date('2026-12-02T23:00:00Z'));
    expect(s.active).toEqual(['night-freeze']);
    expect(s.canSync).toBe(false);
    // The deny window has no manualSync, so even a person waits.
    expect(s.canSyncManually).toBe(false);
    expect(s.nextClose).toBeNull();
    // Thursday 09:00 Paris = 08:00 UTC; an opening instant is excluded, so eligible 1 ms later.
    expect(s.nextOpen).toEqual(new Date('2026-12-03T08:00:00.001Z'));
  });

  it('outside the allow window in the afternoon: a person may sync (manualSync), automation waits', () => {
    const s = targetWindowStatus([office], target, new Date('2026-12-02T18:00:00Z'));
    expect(s).toMatchObject({ active: [], canSync: false, canSyncManually: true, nextClose: null });
    expect(s.nextOpen).toEqual(new Date('2026-12-03T08:00:00.001Z'));
  });

  it('with no window concerning the target: may always sync, nothing opens or closes', () => {
    const at = new Date('2026-12-02T10:00:00Z');
    expect(targetWindowStatus([usOnly], target, at)).toEqual({
      matching: [],
      active: [],
      canSync: true,
      canSyncManually: true,
      nextOpen: at,
      nextClose: null,
    });
  });
});
