import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitMirrorError, GitMirrors } from '../sources/git/git-mirror.js';
import { createTestGitRepo, type TestGitRepo } from '../testing/test-git-repo.js';
import { ExpansionGitReads, type SharedRefs } from './expansion-git-reads.js';

// A real Git repository and a real bare mirror; the shared refs are a map standing in for the
// RepositoryRef rows (the database side is covered by multi-hub.integration.spec.ts).
describe('ExpansionGitReads', () => {
  let repo: TestGitRepo;
  let dataDir: string;
  let mirrors: GitMirrors;
  const stored = new Map<string, string>();
  let fetches = 0;
  const shared: SharedRefs = {
    load: () => Promise.resolve(new Map(stored)),
    fetchMirror: async (id) => {
      fetches++;
      await mirrors.fetch(id, repo.url);
    },
    // As RepositoriesService.recordRefs: fetch, then a row for each ref the mirror now knows.
    record: async (id, refs) => {
      if (failRecord) throw new Error('cannot fetch: remote down');
      await shared.fetchMirror(id);
      const recorded = new Map<string, string>();
      for (const ref of refs) {
        try {
          recorded.set(ref, mirrors.resolve(id, ref));
        } catch {
          continue;
        }
        stored.set(ref, recorded.get(ref) ?? '');
      }
      return recorded;
    },
  };
  let failRecord = false;

  beforeAll(async () => {
    repo = createTestGitRepo({ 'app/a.yaml': 'a: 1\n' });
    dataDir = mkdtempSync(join(tmpdir(), 'flotilla-git-reads-'));
    mirrors = new GitMirrors(dataDir);
    await mirrors.fetch('r', repo.url);
  });
  afterAll(() => {
    repo.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('resolves a ref to the stored commit, fetching a mirror that lacks it, and lists what it resolved', async () => {
    const first = repo.head();
    const second = repo.commit({ 'app/a.yaml': 'a: 2\n' });
    stored.set('main', second);
    expect(mirrors.resolve('r', 'main')).toBe(first);

    const git = new ExpansionGitReads(mirrors, shared);
    await git.prepare('r', { fetch: true });
    expect(fetches).toBe(1);
    expect(git.resolve('r', 'main')).toBe(second);
    expect(git.readFile('r', git.resolve('r', 'main'), 'app/a.yaml')).toBe('a: 2\n');
    // A ref no row records yet comes from the mirror.
    expect(git.resolve('r', 'HEAD')).toBe(second);
    expect(git.resolvedRefs()).toEqual([
      { repositoryId: 'r', ref: 'main', sha: second },
      { repositoryId: 'r', ref: 'HEAD', sha: second },
    ]);
  });

  it('never fetches in a preview: a stored commit the mirror lacks fails the ref that needs it', async () => {
    const third = repo.commit({ 'app/a.yaml': 'a: 3\n' });
    stored.set('main', third);
    const git = new ExpansionGitReads(mirrors, shared);
    await git.prepare('r', { fetch: false });
    expect(fetches).toBe(1);
    expect(() => git.resolve('r', 'main')).toThrow(GitMirrorError);
    expect(() => git.resolve('r', 'main')).toThrow(/has not fetched it yet/);
  });

  it('fetches once for a commit the remote no longer has, not on every expansion', async () => {
    const gone = 'deadbeef'.repeat(5);
    stored.set('old-branch', gone);
    const before = fetches;
    const first = new ExpansionGitReads(mirrors, shared);
    await first.prepare('r', { fetch: true });
    expect(fetches).toBe(before + 1);
    expect(() => first.resolve('r', 'old-branch')).toThrow(/not on the remote any more/);
    // The commit of `main` (missing before) arrived with that fetch.
    expect(first.resolve('r', 'main')).toBe(stored.get('main'));

    const second = new ExpansionGitReads(mirrors, shared);
    await second.prepare('r', { fetch: true });
    expect(fetches).toBe(before + 1);
    // A commit recorded later is worth a fetch again.
    stored.set('main', repo.commit({ 'app/a.yaml': 'a: 4\n' }));
    const third = new ExpansionGitReads(mirrors, shared);
    await third.prepare('r', { fetch: true });
    expect(fetches).toBe(before + 2);
    expect(third.resolve('r', 'main')).toBe(stored.get('main'));
  });

  it('fetches and records a ref no row tracks before resolving it, and a tracked ref never', async () => {
    const git = (...args: string[]) => execFileSync('git', ['-C', repo.dir, ...args], { stdio: 'ignore' });
    git('branch', '-f', 'release');
    // The mirror saw `release` at this commit; the branch moves on while nothing tracks it.
    await mirrors.fetch('r', repo.url);
    const old = mirrors.resolve('r', 'release');
    git('checkout', '-q', 'release');
    const newest = repo.commit({ 'app/a.yaml': 'a: release\n' });
    git('checkout', '-q', 'main');
    expect(stored.has('release')).toBe(false);

    const before = fetches;
    const first = new ExpansionGitReads(mirrors, shared);
    await first.prepare('r', { fetch: true, refs: ['release', 'main'] });
    expect(fetches).toBe(before + 1);
    expect(first.resolve('r', 'release')).toBe(newest);
    expect(newest).not.toBe(old);
    expect(stored.get('release')).toBe(newest);

    // Recorded now: the next expansion reads the row and fetches nothing; a templated ref (`track`)
    // that is tracked costs nothing either.
    const second = new ExpansionGitReads(mirrors, shared);
    await second.prepare('r', { fetch: true, refs: ['release'] });
    await second.track('r', 'main');
    expect(fetches).toBe(before + 1);
    expect(second.resolve('r', 'release')).toBe(newest);
  });

  it('a ref the remote lacks fails, fetched once until the mirror is fetched again', async () => {
    const before = fetches;
    const first = new ExpansionGitReads(mirrors, shared);
    await first.prepare('r', { fetch: true });
    await first.track('r', 'no-such-branch');
    expect(fetches).toBe(before + 1);
    expect(() => first.resolve('r', 'no-such-branch')).toThrow(/is not a branch, tag or commit/);

    const second = new ExpansionGitReads(mirrors, shared);
    await second.prepare('r', { fetch: true, refs: ['no-such-branch'] });
    expect(fetches).toBe(before + 1);
    // A poll fetches the mirror: the branch may exist now, so asking is worth a fetch again.
    await mirrors.fetch('r', repo.url);
    const third = new ExpansionGitReads(mirrors, shared);
    await third.prepare('r', { fetch: true, refs: ['no-such-branch'] });
    expect(fetches).toBe(before + 2);
  });

  it('a ref no row tracks fails when fetching it fails, rather than resolving a stale mirror', async () => {
    execFileSync('git', ['-C', repo.dir, 'branch', '-f', 'hotfix']);
    await mirrors.fetch('r', repo.url);
    failRecord = true;
    try {
      const git = new ExpansionGitReads(mirrors, shared);
      await git.prepare('r', { fetch: true, refs: ['hotfix'] });
      expect(() => git.resolve('r', 'hotfix')).toThrow(/fetching its newest commit failed: cannot fetch/);
      // Tracked refs are unaffected.
      expect(git.resolve('r', 'main')).toBe(stored.get('main'));
    } finally {
      failRecord = false;
    }
  });

  it('a preview fetches nothing and reads a ref without a row from the mirror', async () => {
    const before = fetches;
    const git = new ExpansionGitReads(mirrors, shared);
    await git.prepare('r', { fetch: false, refs: ['preview-only'] });
    await git.track('r', 'HEAD~1');
    expect(fetches).toBe(before);
    expect(git.resolve('r', 'HEAD~1')).toBe(mirrors.resolve('r', 'HEAD~1'));
  });
});
