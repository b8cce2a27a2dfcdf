import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGitRepo, type TestGitRepo } from '../../testing/test-git-repo.js';
import { GitMirrorError, GitMirrors, normalisePath } from './git-mirror.js';

describe('GitMirrors (real git)', () => {
  let repo: TestGitRepo;
  let dataDir: string;
  let mirrors: GitMirrors;

  beforeAll(() => {
    repo = createTestGitRepo({
      'apps/web/a.yaml': 'a: 1\n',
      'apps/web/sub/b.yaml': 'b: 2\n',
      'README.md': 'hi\n',
    });
    dataDir = mkdtempSync(join(tmpdir(), 'flotilla-mirrors-'));
    mirrors = new GitMirrors(dataDir);
  });
  afterAll(() => {
    repo.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('mirrors a repository and reads files at a commit without a checkout', async () => {
    await mirrors.fetch('r1', repo.url);
    const sha = mirrors.resolve('r1', 'main');
    expect(sha).toBe(repo.head());
    expect(mirrors.resolve('r1', 'HEAD')).toBe(sha);
    expect(mirrors.resolve('r1', sha)).toBe(sha);
    expect(mirrors.listFiles('r1', sha, './apps/web/')).toEqual(['apps/web/a.yaml', 'apps/web/sub/b.yaml']);
    expect(mirrors.listFiles('r1', sha)).toEqual(['README.md', 'apps/web/a.yaml', 'apps/web/sub/b.yaml']);
    expect(mirrors.readFile('r1', sha, 'apps/web/sub/b.yaml')).toBe('b: 2\n');
  });

  it('follows new commits, tags and deleted branches on the next fetch', async () => {
    const first = repo.head();
    repo.tag('v1');
    const second = repo.commit({ 'apps/web/a.yaml': 'a: 2\n' });
    await mirrors.fetch('r1', repo.url);
    expect(mirrors.resolve('r1', 'main')).toBe(second);
    expect(mirrors.resolve('r1', 'v1')).toBe(first);
    expect(mirrors.readFile('r1', first, 'apps/web/a.yaml')).toBe('a: 1\n');
    expect(() => mirrors.resolve('r1', 'no-such-branch')).toThrow(GitMirrorError);
  });

  it('names the commits a mirror lacks until it fetches them', async () => {
    const known = repo.head();
    const later = repo.commit({ 'apps/web/a.yaml': 'a: 3\n' });
    // README.md's blob: an object of the mirror, but not a commit.
    const blob = '45b983be36b73c0788dc9cbcb76cbb80fc7bb057';
    expect(mirrors.missingCommits('r1', [known, later, blob])).toEqual([later, blob]);
    expect(mirrors.missingCommits('never-fetched', [known])).toEqual([known]);
    await mirrors.fetch('r1', repo.url);
    expect(mirrors.missingCommits('r1', [known, later])).toEqual([]);
  });

  it('reports an unreachable repository as a fetch error', async () => {
    await expect(mirrors.fetch('r2', 'file:///nonexistent/flotilla')).rejects.toMatchObject({
      code: 'fetch-failed',
    });
    expect(() => mirrors.resolve('r2', 'main')).toThrow(/not been fetched/);
  });

  it('normalises paths', () => {
    expect(['./a/b/', 'a/b', '.', '', './'].map(normalisePath)).toEqual(['a/b', 'a/b', '', '', '']);
  });
});
