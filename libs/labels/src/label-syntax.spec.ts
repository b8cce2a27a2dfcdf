import { describe, expect, it } from 'vitest';
import { labelKeyProblem, labelValueProblem } from './label-syntax.js';

describe('Kubernetes label syntax', () => {
  it.each(['app', 'app.kubernetes.io/name', 'flotilla.dev/canary', 'a_b-c.d', 'A1', 'x'.repeat(63)])(
    'key %s is valid',
    (key) => expect(labelKeyProblem(key)).toBeNull(),
  );
  it.each([
    ['', 'must not be empty'],
    ['-app', 'start and end with an alphanumeric'],
    ['app-', 'start and end with an alphanumeric'],
    ['x'.repeat(64), 'at most 63'],
    ['/app', 'prefix before'],
    ['Example.com/app', 'DNS subdomain'],
    ['example.com/', 'name part must not be empty'],
    ['has space', 'alphanumerics'],
  ])('key %j is refused (%s)', (key, why) => expect(labelKeyProblem(key)).toContain(why));

  it.each(['', 'true', 'eu-west-1', 'v1.2_3'])('value %j is valid', (v) =>
    expect(labelValueProblem(v)).toBeNull(),
  );
  it.each(['not a value', '-x', 'x'.repeat(64), 'a/b'])('value %j is refused', (v) =>
    expect(labelValueProblem(v)).not.toBeNull(),
  );
});
