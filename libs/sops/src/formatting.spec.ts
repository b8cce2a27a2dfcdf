import { describe, expect, it } from 'vitest';
import { formatGoFloat, macBytes } from './sops-value.js';
import { renderLastModified } from './sops-metadata.js';

describe('Go value forms used by the MAC', () => {
  it.each([
    [1234.56789, '1234.56789'],
    [0.1, '0.1'],
    [1, '1'],
    [-2.5, '-2.5'],
    [1e21, '1000000000000000000000'],
    [1.5e22, '15000000000000000000000'],
    [1e-7, '0.0000001'],
    [-1.25e-8, '-0.0000000125'],
  ])('formats %d like strconv.FormatFloat(f, "f", -1, 64)', (n, text) => {
    expect(formatGoFloat(n)).toBe(text);
  });

  it('renders booleans as Go title case and strings as UTF-8', () => {
    expect(Buffer.from(macBytes(true)).toString()).toBe('True');
    expect(Buffer.from(macBytes(false)).toString()).toBe('False');
    expect(Buffer.from(macBytes('é')).length).toBe(2);
  });

  it.each([
    ['2024-11-12T13:33:42Z', '2024-11-12T13:33:42Z'],
    ['2024-11-12T13:33:42.123456Z', '2024-11-12T13:33:42Z'],
    ['2024-11-12T14:33:42+01:00', '2024-11-12T14:33:42+01:00'],
    ['2024-11-12T13:33:42+00:00', '2024-11-12T13:33:42Z'],
  ])('renders lastmodified %s as Go RFC 3339 (%s)', (input, out) => {
    expect(renderLastModified(input)).toBe(out);
  });

  it('accepts a YAML 1.1 timestamp already parsed to a Date', () => {
    expect(renderLastModified(new Date('2023-12-27T11:13:48.000Z'))).toBe('2023-12-27T11:13:48Z');
  });
});
