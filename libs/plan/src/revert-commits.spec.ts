import { describe, expect, it } from 'vitest';
import { commitsToRevert } from './revert-commits.js';

/** A range of commits, each with the fingerprint rendered there. */
function range(wanted: string, commits: [string, string][]) {
  const asked: string[] = [];
  const fingerprints = new Map(commits);
  return {
    asked,
    range: {
      commits: commits.map(([c]) => c),
      wanted,
      atHead: commits.at(-1)?.[1] ?? wanted,
      fingerprintAt: (commit: string) => {
        asked.push(commit);
        return Promise.resolve(fingerprints.get(commit) ?? '');
      },
    },
  };
}

describe('commitsToRevert', () => {
  it.each([
    { name: 'one bad commit', wanted: 'a', commits: [['c1', 'b']], expected: ['c1'] },
    {
      name: 'unrelated commits around the bad one are left alone',
      wanted: 'a',
      commits: [
        ['c1', 'a'],
        ['c2', 'b'],
        ['c3', 'b'],
      ],
      expected: ['c2'],
    },
    {
      name: 'every commit that moved the render, oldest first',
      wanted: 'a',
      commits: [
        ['c1', 'b'],
        ['c2', 'b'],
        ['c3', 'c'],
      ],
      expected: ['c1', 'c3'],
    },
  ] as { name: string; wanted: string; commits: [string, string][]; expected: string[] }[])(
    '$name',
    async ({ wanted, commits, expected }) => {
      expect(await commitsToRevert(range(wanted, commits).range)).toEqual(expected);
    },
  );

  it('asks nothing when the head already renders what is wanted', async () => {
    const r = range('a', [
      ['c1', 'b'],
      ['c2', 'a'],
    ]);
    expect(await commitsToRevert(r.range)).toEqual([]);
    expect(r.asked).toEqual([]);
  });
});
