import { describe, expect, it } from 'vitest';
import { flagOfPath, inFlagWords } from './api-fields.js';

const FLAGS = { timeZone: 'time-zone', clusters: 'clusters', 'spec.destinations': 'destinations' };
const every = () => true;

describe('API fields in the words of the flags', () => {
  it('finds the flag of a field, or of the nearest field enclosing it', () => {
    expect(flagOfPath('timeZone', FLAGS, every)).toBe('time-zone');
    expect(flagOfPath('clusters[1]', FLAGS, every)).toBe('clusters');
    expect(flagOfPath('spec.destinations[0].namespace', FLAGS, every)).toBe('destinations');
  });

  it('keeps the API path for a field no flag fills, or when the flag is not how it was given', () => {
    expect(flagOfPath('schedule', FLAGS, every)).toBeUndefined();
    expect(flagOfPath('spec', FLAGS, every)).toBeUndefined();
    expect(flagOfPath(undefined, FLAGS, every)).toBeUndefined();
    expect(flagOfPath('timeZone', undefined, every)).toBeUndefined();
    expect(flagOfPath('timeZone', FLAGS, (flag) => flag !== 'time-zone')).toBeUndefined();
  });

  it("rewords the hub's message with the flag, keeping the API path at the end", () => {
    expect(
      inFlagWords(
        'invalid request body: timeZone: unknown time zone "Mars/Olympus"',
        'timeZone',
        'time-zone',
      ),
    ).toBe(
      'invalid request body: --time-zone: unknown time zone "Mars/Olympus" (--time-zone; API field timeZone)',
    );
    expect(inFlagWords('no cluster matches', 'clusters', 'clusters')).toBe(
      '--clusters: no cluster matches (--clusters; API field clusters)',
    );
  });
});
