import { describe, expect, it } from 'vitest';
import { type Assignment, assignmentSchema } from '@flotilla/contract';
import { type WindowEvaluator, decideSync } from './sync-gate.js';

const at = new Date('2026-12-02T10:00:00Z');
const base = (over: Partial<Record<string, unknown>> = {}): Assignment =>
  assignmentSchema.parse({
    targetId: 't1',
    name: 'web-east',
    appSet: 'web',
    namespace: 'shop',
    revision: 'abc',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy: {},
    ...over,
  });
const denyWindow = { kind: 'deny', schedule: '0 9 * * *', duration: '2h' };
const closed: WindowEvaluator = () => ({ canSync: false, nextChange: '2026-12-02T11:00:00Z' });
const open: WindowEvaluator = () => ({ canSync: true, nextChange: null });
const breakGlass = (over: Record<string, unknown>) => ({
  id: 'bg-1',
  reason: 'incident 42',
  expiresAt: '2026-12-02T12:00:00Z',
  allowSyncOutsideWindows: false,
  pauseSelfHeal: false,
  ...over,
});

describe('decideSync', () => {
  it('allows when no window applies, without asking the evaluator', () => {
    expect(decideSync(base(), 'east', 'auto', at, closed)).toEqual({ allowed: true });
  });

  it('passes the target, namespace and cluster to the window evaluator', () => {
    const seen: unknown[] = [];
    decideSync(base({ windows: [denyWindow] }), 'east', 'auto', at, (_w, subject, when, opts) => {
      seen.push(subject, when, opts);
      return { canSync: true, nextChange: null };
    });
    expect(seen).toEqual([
      { application: 'web-east', namespace: 'shop', cluster: 'east' },
      at,
      { manual: false },
    ]);
  });

  it('blocks outside windows and says when to look again', () => {
    expect(decideSync(base({ windows: [denyWindow] }), 'east', 'self-heal', at, closed)).toEqual({
      allowed: false,
      reason: 'window',
      message: 'blocked by sync windows until 2026-12-02T11:00:00.000Z',
      retryAt: new Date('2026-12-02T11:00:00Z'),
    });
    expect(decideSync(base({ windows: [denyWindow] }), 'east', 'auto', at, open)).toEqual({ allowed: true });
  });

  it('lets an active break-glass sync outside windows, and names it', () => {
    const a = base({ windows: [denyWindow], breakGlass: [breakGlass({ allowSyncOutsideWindows: true })] });
    expect(decideSync(a, 'east', 'auto', at, closed)).toEqual({ allowed: true, breakGlassId: 'bg-1' });
    const expired = base({
      windows: [denyWindow],
      breakGlass: [breakGlass({ allowSyncOutsideWindows: true, expiresAt: '2026-12-02T09:00:00Z' })],
    });
    expect(decideSync(expired, 'east', 'auto', at, closed).allowed).toBe(false);
  });

  it('pauses self-heal but not automated sync under a pausing break-glass', () => {
    const a = base({ breakGlass: [breakGlass({ pauseSelfHeal: true })] });
    expect(decideSync(a, 'east', 'self-heal', at, open)).toEqual({
      allowed: false,
      reason: 'paused',
      message: 'self-heal paused by break-glass bg-1 until 2026-12-02T12:00:00Z: incident 42',
      retryAt: new Date('2026-12-02T12:00:00Z'),
      breakGlassId: 'bg-1',
    });
    expect(decideSync(a, 'east', 'auto', at, open)).toEqual({ allowed: true });
  });

  it('blocks, saying why, when the windows cannot be evaluated', () => {
    const broken: WindowEvaluator = () => {
      throw new Error('windows[0].schedule: bad cron "61 * * * *"');
    };
    expect(decideSync(base({ windows: [denyWindow] }), 'east', 'auto', at, broken)).toEqual({
      allowed: false,
      reason: 'window',
      message: 'sync windows cannot be evaluated: windows[0].schedule: bad cron "61 * * * *"',
    });
  });

  it('names the windows that hold the sync, when the hub sent their names', () => {
    const evaluate =
      (active: number[], nextChange: string | null): WindowEvaluator =>
      () => ({
        canSync: false,
        nextChange,
        active,
        matching: [0, 1, 2],
      });
    const windows = [
      { ...denyWindow, name: 'eu-night-freeze' },
      { ...denyWindow, name: 'black-friday' },
      { kind: 'allow', schedule: '0 22 * * *', duration: '1h', name: 'nightly' },
    ];
    const a = base({ windows });
    const message = (active: number[], next: string | null = '2026-12-02T11:00:00Z') => {
      const d = decideSync(a, 'east', 'auto', at, evaluate(active, next));
      return d.allowed ? '' : d.message;
    };
    expect(message([0])).toBe('blocked by window eu-night-freeze until 2026-12-02T11:00:00.000Z');
    expect(message([0, 1])).toBe(
      'blocked by windows eu-night-freeze, black-friday until 2026-12-02T11:00:00.000Z',
    );
    expect(message([])).toBe('outside allow window nightly until 2026-12-02T11:00:00.000Z');
    expect(message([0], null)).toBe('blocked by window eu-night-freeze with no opening within a year');
    // Windows without names (an older hub): the generic text.
    expect(decideSync(base({ windows: [denyWindow] }), 'east', 'auto', at, closed)).toMatchObject({
      message: 'blocked by sync windows until 2026-12-02T11:00:00.000Z',
    });
  });
});
