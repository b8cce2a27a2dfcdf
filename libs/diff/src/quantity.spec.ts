import { describe, expect, it } from 'vitest';
import { parseQuantity, quantitiesEqual } from './quantity.js';

describe('quantities', () => {
  it.each([
    ['1000m', '1'],
    ['0.5', '500m'],
    [0.5, '500m'],
    [1, '1000m'],
    ['1Gi', '1024Mi'],
    ['1.5Gi', '1536Mi'],
    ['2G', '2e9'],
    ['1k', '1000'],
    ['1Ki', '1024'],
    ['100u', '0.0001'],
    ['1E', '1000P'],
    ['+1', '1'],
  ])('%s equals %s', (a, b) => {
    expect(quantitiesEqual(a, b)).toBe(true);
  });

  it.each([
    ['1G', '1Gi'],
    ['500m', '0.51'],
    ['1M', '1m'],
    ['1', '-1'],
  ])('%s differs from %s', (a, b) => {
    expect(quantitiesEqual(a, b)).toBe(false);
  });

  it('rounds what is finer than a nano up, as the API server does', () => {
    expect(quantitiesEqual('0.0000000001', '1n')).toBe(true);
  });

  it.each(['', 'abc', '1.2.3', '1Qi', '1 Gi', null, {}, true])('does not read %j as a quantity', (text) => {
    expect(parseQuantity(text)).toBeUndefined();
    expect(quantitiesEqual(text, text)).toBe(false);
  });
});
