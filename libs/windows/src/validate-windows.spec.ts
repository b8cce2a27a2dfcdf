import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { validateWindows } from './validate-windows.js';
import { WindowError } from './window-error.js';

interface Case {
  name: string;
  windows: unknown;
  code: string;
  index: number | null;
  path: string;
  message?: string;
}

const cases = parse(readFileSync(new URL('./testdata/invalid.yaml', import.meta.url), 'utf8')) as Case[];

describe('validateWindows rejects', () => {
  for (const c of cases) {
    it(c.name, () => {
      let caught: unknown;
      try {
        validateWindows(c.windows);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(WindowError);
      const err = caught as WindowError;
      expect(err.code).toBe(c.code);
      expect(err.index).toBe(c.index);
      expect(err.path).toBe(c.path);
      if (c.index !== null) expect(err.message).toContain(`sync window ${c.index}`);
      if (c.message) expect(err.message).toContain(c.message);
    });
  }
});

describe('validateWindows accepts', () => {
  it('fills defaults and treats an empty time zone as UTC, as Argo CD does', () => {
    const [w] = validateWindows([
      { kind: 'deny', schedule: '0 22 * * 1-5', duration: '1h30m', timeZone: '' },
    ]);
    expect(w).toEqual({
      kind: 'deny',
      schedule: '0 22 * * 1-5',
      duration: '1h30m',
      timeZone: 'UTC',
      applications: [],
      namespaces: [],
      clusters: [],
      manualSync: false,
      andOperator: false,
    });
  });

  it('takes names, lists, ranges, steps and ? as robfig/cron does', () => {
    const schedules = [
      '*/15 9-17 * * MON-FRI',
      '0 0 1,15 jan,jul ?',
      '5/20 * * * *',
      '0 0 ? * sun',
      '0 12 * * 0-6/2',
    ];
    expect(() =>
      validateWindows(schedules.map((schedule) => ({ kind: 'allow', schedule, duration: '1h' }))),
    ).not.toThrow();
  });

  it('takes a step wider than its range as the first value, as robfig/cron does', () => {
    expect(() =>
      validateWindows(
        ['*/90 * * * *', '0 0 1-31/40 * *', '10/70 * * * *'].map((schedule) => ({
          kind: 'allow',
          schedule,
          duration: '1h',
        })),
      ),
    ).not.toThrow();
  });

  it('reads null (an empty YAML file) as no windows', () => {
    expect(validateWindows(null)).toEqual([]);
  });
});
