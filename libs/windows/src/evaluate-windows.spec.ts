import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { evaluateWindows, nextOpen } from './evaluate-windows.js';
import { validateWindows } from './validate-windows.js';
import { type WindowTarget } from './window-selector.js';

interface Case {
  name: string;
  windows: unknown[];
  at: string;
  manual?: boolean;
  target?: Partial<WindowTarget>;
  expect: { canSync: boolean; active: number[]; matching: number[]; nextChange: string | null };
}

function load(file: string): Case[] {
  return parse(readFileSync(new URL(`./testdata/${file}`, import.meta.url), 'utf8')) as Case[];
}

const TARGETS: Record<string, WindowTarget> = {
  'dst.yaml': { application: 'guestbook', namespace: 'prod', cluster: 'eu-1' },
  'resolution.yaml': { application: 'guestbook', namespace: 'prod', cluster: 'eu-1' },
  'argo-cd.yaml': { application: 'app1', namespace: 'public', cluster: 'in-cluster' },
};

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString().replace('.000Z', 'Z'));

for (const [file, target] of Object.entries(TARGETS)) {
  describe(`evaluateWindows: ${file}`, () => {
    for (const c of load(file)) {
      it(c.name, () => {
        const windows = validateWindows(c.windows);
        const result = evaluateWindows(windows, { ...target, ...c.target }, new Date(c.at), {
          manual: c.manual === true,
        });
        expect(result.canSync).toBe(c.expect.canSync);
        expect(result.active).toEqual(c.expect.active);
        expect(result.matching).toEqual(c.expect.matching);
        expect(iso(result.nextChange)).toBe(c.expect.nextChange);
      });
    }
  });
}

describe('evaluateWindows over many times', () => {
  const target = TARGETS['dst.yaml'] as WindowTarget;
  const windows = validateWindows([
    { kind: 'allow', schedule: '* * * * *', duration: '1h', applications: ['guestbook'] },
    {
      kind: 'deny',
      schedule: '0 22 * * 1-5',
      duration: '8h',
      timeZone: 'Europe/Paris',
      namespaces: ['prod'],
    },
    {
      kind: 'deny',
      schedule: '30 1 * * *',
      duration: '1h',
      timeZone: 'America/New_York',
      clusters: ['eu-*'],
    },
  ]);

  it('gives the same answers in a batch as one time at a time (cached stretches do not leak)', () => {
    const times = Array.from(
      { length: 60 },
      (_, i) => Date.UTC(2026, 9, 20) + i * 4 * 3_600_000 + 7 * 60_000,
    );
    const batch = times.map((t) => evaluateWindows(windows, target, new Date(t)));
    const shuffled = [...times].reverse().map((t) => evaluateWindows(windows, target, new Date(t)));
    const fresh = times.map((t) =>
      evaluateWindows(validateWindows(windows.map((w) => ({ ...w }))), target, new Date(t)),
    );
    expect(shuffled.reverse()).toEqual(batch);
    expect(fresh).toEqual(batch);
  });

  it('reports a nextChange at which the verdict really changes, and none before it', () => {
    for (let i = 0; i < 40; i++) {
      const at = Date.UTC(2026, 9, 23) + i * 97 * 60_000;
      const r = evaluateWindows(windows, target, new Date(at));
      expect(r.nextChange).not.toBeNull();
      const change = (r.nextChange as Date).getTime();
      for (const f of [0.25, 0.5, 0.75]) {
        const between = at + (change - at) * f;
        if (between > at) expect(evaluateWindows(windows, target, between).canSync).toBe(r.canSync);
      }
      const atChange = evaluateWindows(windows, target, change).canSync;
      const justAfter = evaluateWindows(windows, target, change + 1).canSync;
      expect(atChange !== r.canSync || justAfter !== r.canSync).toBe(true);
    }
  });

  it('accepts epoch milliseconds with a fraction for times finer than a millisecond', () => {
    const w = validateWindows([
      { kind: 'allow', schedule: '0 10 * * *', duration: '1h', applications: ['guestbook'] },
    ]);
    const tenOClock = Date.UTC(2026, 0, 5, 10);
    expect(evaluateWindows(w, target, tenOClock).canSync).toBe(false);
    expect(evaluateWindows(w, target, tenOClock + 0.0005).canSync).toBe(true);
  });
});

describe('nextOpen', () => {
  const target: WindowTarget = { application: 'guestbook', namespace: 'prod', cluster: 'eu-1' };
  const allow = validateWindows([
    { kind: 'allow', schedule: '0 9 * * *', duration: '2h', timeZone: 'Europe/Paris', applications: ['*'] },
  ]);
  const deny = validateWindows([
    { kind: 'deny', schedule: '0 9 * * *', duration: '2h', timeZone: 'Europe/Paris', applications: ['*'] },
  ]);

  it('is the first millisecond after an allow window opens (its start is excluded)', () => {
    const open = nextOpen(allow, target, new Date('2026-03-29T05:00:00Z'));
    expect(open?.toISOString()).toBe('2026-03-29T07:00:00.001Z');
    expect(evaluateWindows(allow, target, open as Date).canSync).toBe(true);
  });

  it('is the end of a deny window (its end is excluded)', () => {
    const open = nextOpen(deny, target, new Date('2026-03-29T07:30:00Z'));
    expect(open?.toISOString()).toBe('2026-03-29T09:00:00.000Z');
  });

  it('is the given time when the target is not blocked', () => {
    const from = new Date('2026-03-29T10:00:00Z');
    expect(nextOpen(deny, target, from)).toBe(from);
  });

  it('is null when nothing opens within the horizon', () => {
    const never = validateWindows([
      { kind: 'allow', schedule: '0 0 30 2 *', duration: '1h', applications: ['*'] },
    ]);
    expect(nextOpen(never, target, new Date('2026-03-29T10:00:00Z'))).toBeNull();
  });
});
