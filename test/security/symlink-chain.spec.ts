import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkKustomizationTree,
  checkTreeEntries,
  resolveThroughLinks,
  type TreeEntry,
} from '@flotilla/manifests';
import { createTestGitRepo, waitForIdleQueues, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { caller, startSecureHub, tableCounts, waitUntil, type Refusal } from './security-hub.js';

// Issue #15 item 14: `a/b/x -> ../..` alone stays inside the repository, and so does the text
// `a/b/x/../../..` read without links; but in a checkout the kernel follows x first, and
// `y -> a/b/x/../../..` lands above the repository (at `/` for a shallow one). Each link must be
// resolved as the filesystem resolves it, through the others, before it is judged.

const CONFIGMAP = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  region: eu1\n`;

function commitAll(dir: string, message: string): void {
  execFileSync('git', ['-C', dir, 'add', '-A']);
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', message]);
}

/** The tree entries of HEAD as the hub's mirror reads them (`git ls-tree -r -l`). */
function treeEntries(dir: string): TreeEntry[] {
  const out = execFileSync('git', ['-C', dir, 'ls-tree', '-r', '-l', '-z', 'HEAD'], { encoding: 'utf8' });
  return out
    .split('\0')
    .filter((l) => l !== '')
    .map((line) => {
      const [meta = '', path = ''] = line.split('\t');
      const [mode, , sha = '', size] = meta.split(/\s+/);
      if (mode === '120000') {
        const linkTarget = execFileSync('git', ['-C', dir, 'cat-file', 'blob', sha], { encoding: 'utf8' });
        return { path, kind: 'symlink', size: linkTarget.length, linkTarget };
      }
      return { path, kind: 'file', size: Number(size) };
    });
}

describe('a chain of symlinks is resolved as the filesystem does', () => {
  it('refuses y -> a/b/x/../../.. when a/b/x -> ../.. (each alone looks inside)', () => {
    const repo = createTestGitRepo({ 'apps/web/config.yaml': CONFIGMAP });
    try {
      mkdirSync(join(repo.dir, 'a/b'), { recursive: true });
      symlinkSync('../..', join(repo.dir, 'a/b/x'));
      symlinkSync('a/b/x/../../..', join(repo.dir, 'y'));
      commitAll(repo.dir, 'a chain of links');
      const entries = treeEntries(repo.dir);
      expect(entries.find((e) => e.path === 'y')?.linkTarget).toBe('a/b/x/../../..');
      expect(() => checkTreeEntries(entries)).toThrow(
        /^y: symlink to "a\/b\/x\/\.\.\/\.\.\/\.\." points outside the repository$/,
      );
      // The first link alone is harmless and stays accepted.
      expect(() => checkTreeEntries(entries.filter((e) => e.path !== 'y'))).not.toThrow();
      // A chain that stays inside is followed to where it really goes.
      const links = new Map([['a/b/x', '../..']]);
      expect(resolveThroughLinks('', 'a/b/x/apps/web/config.yaml', links)).toBe('apps/web/config.yaml');
      expect(resolveThroughLinks('', 'a/b/x/../../..', links)).toBeNull();
    } finally {
      repo.remove();
    }
  });

  it('refuses a kustomization entry that climbs out through a link', () => {
    const files = new Set(['apps/web/kustomization.yaml', 'a/b/x', 'a/b', 'a', 'apps/web', 'apps']);
    const kustomization = 'resources:\n  - ../../a/b/x/../../../etc\n';
    const read = () => kustomization;
    const links = new Map([['a/b/x', '../..']]);
    expect(() => checkKustomizationTree('apps/web', files, read, false, links)).toThrow(
      /apps\/web\/kustomization\.yaml: resources\[0\]: "\.\.\/\.\.\/a\/b\/x\/\.\.\/\.\.\/\.\.\/etc" points outside the repository/,
    );
  });
});

describe('the hub refuses a commit with the chain, for plain and kustomize renders, changing nothing', () => {
  let hub: TestHub;
  let repo: TestGitRepo;
  let call: ReturnType<typeof caller>;
  const appSet = (name: string, path: string) => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ list: { elements: [{ cluster: 'eu1' }] } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          source: { repoURL: repo.url, targetRevision: 'HEAD', path },
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  });
  const state = async (name: string) =>
    (await call<{ status: string; error: Refusal | null }>('GET', `/api/v1/appsets/${name}`)).body;

  beforeAll(async () => {
    repo = createTestGitRepo({
      'apps/web/config.yaml': CONFIGMAP,
      'apps/kust/kustomization.yaml': 'resources: [config.yaml]\n',
      'apps/kust/config.yaml': CONFIGMAP.replace('web-config', 'kust-config'),
    });
    hub = await startSecureHub();
    call = caller(hub);
    expect((await call('POST', '/api/v1/clusters', { body: { name: 'eu1' } })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 60_000);

  it('a plain directory and a kustomization with the chain inside are both refused', async () => {
    mkdirSync(join(repo.dir, 'apps/web/a/b'), { recursive: true });
    // apps/web/a/b/x -> apps/web; apps/web/y -> apps/web/../../.. = above the repository.
    symlinkSync('../..', join(repo.dir, 'apps/web/a/b/x'));
    symlinkSync('a/b/x/../../../passwd.yaml', join(repo.dir, 'apps/web/y.yaml'));
    mkdirSync(join(repo.dir, 'apps/kust/a/b'), { recursive: true });
    symlinkSync('../..', join(repo.dir, 'apps/kust/a/b/x'));
    symlinkSync('a/b/x/../../../etc', join(repo.dir, 'apps/kust/y'));
    commitAll(repo.dir, 'chains of links');
    const before = await tableCounts(hub);
    for (const [name, path, link] of [
      ['chain-plain', 'apps/web', 'apps/web/y.yaml'],
      ['chain-kust', 'apps/kust', 'apps/kust/y'],
    ] as const) {
      expect((await call('POST', '/api/v1/appsets', { body: appSet(name, path) })).status).toBe(201);
      const s = await waitUntil(
        `appset ${name} to fail`,
        () => state(name),
        (v) => v.status === 'Error' || v.status === 'Ready',
      );
      expect(s.status).toBe('Error');
      expect(s.error?.message).toContain(`${link}: symlink to`);
      expect(s.error?.message).toContain('points outside the repository');
    }
    await waitForIdleQueues(hub.app);
    const after = await tableCounts(hub);
    expect([after['Target'], after['Bundle']]).toEqual([before['Target'], before['Bundle']]);
  });
});
