import { describe, expect, it } from 'vitest';
import { repoPermitted } from './check-references.js';

describe('repoPermitted (a project sourceRepos)', () => {
  it.each([
    [['*'], 'https://github.com/a/b', true],
    [['https://github.com/example/*'], 'https://github.com/example/team/web', true],
    [['https://github.com/example/web'], 'https://github.com/example/web.git', true],
    [['https://github.com/example/web.git'], 'https://github.com/example/web', true],
    [['https://github.com/Example/Web'], 'https://github.com/example/web/', true],
    [['https://github.com/example/*'], 'https://gitlab.com/example/web', false],
    [
      ['https://github.com/example/*', '!https://github.com/example/secret'],
      'https://github.com/example/secret',
      false,
    ],
    [
      ['https://github.com/example/*', '!https://github.com/example/secret'],
      'https://github.com/example/open',
      true,
    ],
    [[], 'https://github.com/a/b', false],
  ])('%j permits %s: %s', (sourceRepos, url, permitted) => {
    expect(repoPermitted(sourceRepos, url)).toBe(permitted);
  });
});
