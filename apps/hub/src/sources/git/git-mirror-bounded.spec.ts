import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGitRepo, type TestGitRepo } from '../../testing/test-git-repo.js';
import { GitMirrors } from './git-mirror.js';

// Issue #15 item 15: a repository author chose the tree. Reading it must never hold Node's only
// thread (one blocking `git cat-file` per symlink froze /healthz for 38 s at 1,500 symlinks), and the
// work one render asks for is bounded, refused with a clear error past the bound.

const LINKS = 1_500;

describe('reading a tree with many symlinks', () => {
  let repo: TestGitRepo;
  let dataDir: string;
  let mirrors: GitMirrors;
  let sha: string;

  beforeAll(async () => {
    repo = createTestGitRepo({ 'apps/web/config.yaml': 'apiVersion: v1\nkind: ConfigMap\n' });
    mkdirSync(join(repo.dir, 'links'));
    for (let i = 0; i < LINKS; i++)
      symlinkSync(`../apps/web/config.yaml`, join(repo.dir, `links/l${i}.yaml`));
    execFileSync('git', ['-C', repo.dir, 'add', '-A']);
    execFileSync('git', [
      '-C',
      repo.dir,
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@t',
      'commit',
      '-qm',
      'links',
    ]);
    sha = repo.head();
    dataDir = mkdtempSync(join(tmpdir(), 'flotilla-mirrors-'));
    mirrors = new GitMirrors(dataDir);
    await mirrors.fetch('r1', repo.url);
  }, 120_000);
  afterAll(() => {
    repo.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('lets the event loop run while the tree and every link target are read', async () => {
    const order: string[] = [];
    // A blocking read finishes (and its promise settles, in a microtask) before any macrotask can run;
    // an awaited child process lets this one run first, as it would let /healthz answer.
    setImmediate(() => order.push('event loop ran'));
    const reading = mirrors.listEntries('r1', sha).then((entries) => {
      order.push('tree read');
      return entries;
    });
    const entries = await reading;
    expect(order).toEqual(['event loop ran', 'tree read']);
    const links = entries.filter((e) => e.kind === 'symlink');
    expect(links).toHaveLength(LINKS);
    expect(new Set(links.map((e) => e.linkTarget))).toEqual(new Set(['../apps/web/config.yaml']));
    expect(entries.find((e) => e.path === 'apps/web/config.yaml')).toMatchObject({ kind: 'file' });
  });

  it('reads many files with one awaited child process, in order, and names a missing one', async () => {
    const order: string[] = [];
    setImmediate(() => order.push('event loop ran'));
    const paths = ['apps/web/config.yaml', ...Array.from({ length: 200 }, () => 'apps/web/config.yaml')];
    const contents = await mirrors.readFiles('r1', sha, paths).finally(() => order.push('files read'));
    expect(order).toEqual(['event loop ran', 'files read']);
    expect(contents).toHaveLength(201);
    expect(new Set(contents)).toEqual(new Set(['apiVersion: v1\nkind: ConfigMap\n']));
    await expect(mirrors.readFiles('r1', sha, ['apps/web/config.yaml', 'no/such.yaml'])).rejects.toThrow(
      /^file no\/such\.yaml does not exist at [0-9a-f]{12}$/,
    );
  });

  it('refuses a tree past the symlink or entry bound, with the counts', async () => {
    await expect(
      mirrors.listEntries('r1', sha, { maxEntries: 50_000, maxSymlinks: 1_000 }),
    ).rejects.toMatchObject({
      code: 'tree-too-large',
      message: `commit ${sha.slice(0, 12)} has ${LINKS} symlinks; a render follows at most 1000`,
    });
    await expect(
      mirrors.listEntries('r1', sha, { maxEntries: 100, maxSymlinks: 5_000 }),
    ).rejects.toMatchObject({
      code: 'tree-too-large',
      message: `commit ${sha.slice(0, 12)} has ${LINKS + 1} tree entries; a render reads at most 100`,
    });
  });
});
