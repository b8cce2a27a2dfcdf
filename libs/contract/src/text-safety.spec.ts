import { describe, expect, it } from 'vitest';
import { findUnstorableText, textProblem } from './text-safety.js';

describe('findUnstorableText', () => {
  it('finds NUL and lone surrogates in values and keys, naming the path', () => {
    expect(findUnstorableText({ metadata: { labels: { team: 'a\0b' } } })).toEqual({
      path: 'metadata.labels.team',
      problem: 'NUL character',
    });
    expect(findUnstorableText({ list: ['ok', { ['k\uD800']: 1 }] }, ['body'])).toEqual({
      path: 'body.list[1].k\uFFFD',
      problem: 'lone surrogate',
    });
    expect(findUnstorableText(['\uDC00'])).toEqual({ path: '[0]', problem: 'lone surrogate' });
  });

  it('accepts ordinary text, including surrogate pairs (emoji) and other control characters', () => {
    expect(findUnstorableText({ name: 'web 🚀', note: 'tab\there', n: 3, ok: true, x: null })).toBeNull();
    expect(textProblem('\uD83D\uDE80')).toBeNull();
    expect(textProblem('\uD83D')).toBe('lone surrogate');
    expect(textProblem('\uDE80x')).toBe('lone surrogate');
  });
});
