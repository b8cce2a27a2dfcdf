import { describe, expect, it } from 'vitest';
import { GroupCommit } from './group-commit.js';

/** A commit the test finishes by hand, recording each group it was given. */
function manualCommits() {
  const groups: number[][] = [];
  const finish: (() => void)[] = [];
  const commit = (group: number[]) =>
    new Promise<number[]>((resolve) => {
      groups.push(group);
      finish.push(() => resolve(group.map((n) => n * 10)));
    });
  return { groups, finish, commit };
}

describe('GroupCommit', () => {
  it('commits the items that arrive while a group commits together, in one next group', async () => {
    const c = manualCommits();
    const gc = new GroupCommit<number, number>(
      c.commit,
      () => 1,
      100,
      () => -1,
    );
    const results = [1, 2, 3].map((n) => gc.submit(n));
    expect(c.groups).toEqual([[1]]);
    c.finish[0]?.();
    await expect.poll(() => c.groups).toEqual([[1], [2, 3]]);
    c.finish[1]?.();
    expect(await Promise.all(results)).toEqual([10, 20, 30]);
  });

  it('lets `inFlight` groups commit at once, and groups what arrives meanwhile', async () => {
    const c = manualCommits();
    const gc = new GroupCommit<number, number>(
      c.commit,
      () => 1,
      100,
      () => -1,
      2,
    );
    const results = [1, 2, 3, 4].map((n) => gc.submit(n));
    // Two groups are committing; the others wait for either to finish.
    expect(c.groups).toEqual([[1], [2]]);
    c.finish[1]?.();
    await expect.poll(() => c.groups).toEqual([[1], [2], [3, 4]]);
    c.finish[0]?.();
    c.finish[2]?.();
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40]);
  });

  it('retries a failed group one item at a time, so only the bad item fails', async () => {
    const gc = new GroupCommit<number, number>(
      (group) =>
        group.includes(2)
          ? Promise.reject(new Error('item 2 cannot be committed'))
          : Promise.resolve(group.map((n) => n * 10)),
      () => 1,
      100,
      () => -1,
      2,
    );
    const settled = await Promise.allSettled([1, 2, 3, 4].map((n) => gc.submit(n)));
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : 'failed'))).toEqual([
      10,
      'failed',
      30,
      40,
    ]);
  });
});
