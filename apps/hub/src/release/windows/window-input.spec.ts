import { describe, expect, it } from 'vitest';
import { HubError } from '../../common/hub-error.js';
import { parseWindowInput } from './window-input.js';

function refusal(body: unknown): { status: number; code: string; path: string | undefined; message: string } {
  try {
    parseWindowInput(body);
  } catch (e) {
    if (e instanceof HubError) return { status: e.status, code: e.code, path: e.path, message: e.message };
    throw e;
  }
  throw new Error('accepted');
}

const window = { kind: 'allow', schedule: '0 9 * * 1-5', duration: '8h', namespaces: ['prod-*'] };

describe('parseWindowInput', () => {
  it('fills the defaults of the contract and keeps description and reason apart from the window', () => {
    expect(
      parseWindowInput({ name: 'office', ...window, description: 'office hours', reason: 'CHG-1' }),
    ).toEqual({
      window: {
        kind: 'allow',
        schedule: '0 9 * * 1-5',
        duration: '8h',
        timeZone: 'UTC',
        applications: [],
        namespaces: ['prod-*'],
        clusters: [],
        manualSync: false,
        andOperator: false,
      },
      projects: [],
      description: 'office hours',
      reason: 'CHG-1',
    });
  });

  it('keeps the projects a window is scoped to sorted and once each', () => {
    expect(parseWindowInput({ ...window, projects: ['web', 'payments', 'web'] }).projects).toEqual([
      'payments',
      'web',
    ]);
  });

  it.each([
    [{ ...window, schedule: '0 25 * * *' }, 'invalid-schedule', 'schedule'],
    [{ ...window, duration: 'eight hours' }, 'invalid-duration', 'duration'],
    [{ ...window, timeZone: 'Europe/Atlantis' }, 'invalid-time-zone', 'timeZone'],
    [{ ...window, kind: 'block' }, 'invalid-kind', 'kind'],
    [{ ...window, namespaces: 'prod-*' }, 'invalid-field', 'namespaces'],
    [{ ...window, clusters: ['eu-*', 3] }, 'invalid-field', 'clusters[1]'],
    [{ ...window, schedules: '* * * * *' }, 'invalid-request', 'schedules'],
    [{ ...window, reason: 42 }, 'invalid-request', 'reason'],
    [{ ...window, projects: ['web', 'Payments'] }, 'invalid-request', 'projects[1]'],
  ])('refuses %j with %s at %s', (body, code, path) => {
    const r = refusal(body);
    expect(r).toMatchObject({ status: 400, code, path });
    // The message names the field, without the list index a single window does not have.
    expect(r.message).toContain(path);
    expect(r.message).not.toContain('[0]');
  });
});
