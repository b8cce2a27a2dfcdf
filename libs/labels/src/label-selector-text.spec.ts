import { describe, expect, it } from 'vitest';
import { compileSelector, LabelSelectorError, parseSelectorText } from './label-selector.js';

const match = (text: string, labels: Record<string, string>) =>
  compileSelector(parseSelectorText(text, 'query.selector'), 'query.selector')(labels);

describe('parseSelectorText (kubectl -l syntax)', () => {
  it('reads equality, inequality, set and existence terms', () => {
    expect(parseSelectorText('env=prod, tier!=edge,region in (eu, us),!legacy,team', 's')).toEqual({
      matchLabels: { env: 'prod' },
      matchExpressions: [
        { key: 'tier', operator: 'NotIn', values: ['edge'] },
        { key: 'region', operator: 'In', values: ['eu', 'us'] },
        { key: 'legacy', operator: 'DoesNotExist' },
        { key: 'team', operator: 'Exists' },
      ],
    });
  });

  it('matches as Kubernetes does: every term must hold', () => {
    const labels = { env: 'prod', region: 'eu', team: 'a' };
    expect(match('env==prod,region in (eu,us)', labels)).toBe(true);
    expect(match('env=prod,region notin (eu)', labels)).toBe(false);
    expect(match('!team', labels)).toBe(false);
    expect(match('tier!=edge', labels)).toBe(true); // absent key: != holds
    expect(match('', labels)).toBe(true);
  });

  it('keeps two different values for one key as an impossible AND, not the last one', () => {
    expect(match('env=prod,env=dev', { env: 'prod' })).toBe(false);
  });

  it('accepts prefixed keys', () => {
    expect(match('example.com/tier=web', { 'example.com/tier': 'web' })).toBe(true);
  });

  it.each([
    ['env=prod)', 'unbalanced parentheses'],
    ['region in (eu', 'unbalanced parentheses'],
    ['region in ()', 'needs at least one value'],
    ['a b c', 'expected key=value'],
    ['!env=prod', 'expected key=value'],
    ['-bad=1', 'not a valid label key'],
  ])('refuses %j naming the term and the path', (text, why) => {
    let err: unknown;
    try {
      parseSelectorText(text, 'query.selector');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LabelSelectorError);
    expect((err as LabelSelectorError).path).toContain('query.selector');
    expect((err as LabelSelectorError).message).toContain(why);
  });
});
