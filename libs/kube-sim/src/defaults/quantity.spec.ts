import { describe, expect, it } from 'vitest';
import { canonicalQuantity } from './quantity.js';

describe('canonicalQuantity', () => {
  it.each([
    ['1000m', '1'],
    ['0.5', '500m'],
    ['1024Mi', '1Gi'],
    ['1.5Gi', '1536Mi'],
    ['2000', '2k'],
    ['1500', '1500'],
    ['100m', '100m'],
    ['128Mi', '128Mi'],
    ['512Ki', '512Ki'],
    ['1e3', '1e3'],
    ['0', '0'],
    ['0.0001', '100u'],
    ['1.5', '1500m'],
    ['100M', '100M'],
    ['1000Mi', '1000Mi'],
    ['0.5Gi', '512Mi'],
    ['2048Ki', '2Mi'],
    ['500Mi', '500Mi'],
    ['1', '1'],
    ['250m', '250m'],
  ])('%s → %s', (input, want) => {
    expect(canonicalQuantity(input)).toBe(want);
  });

  it('rejects garbage', () => {
    expect(() => canonicalQuantity('1x')).toThrow(/regular expression/);
  });
});
