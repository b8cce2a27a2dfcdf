import type { ExplainView } from '@flotilla/contract';
import { describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { explainText, run } from './explain.command.js';

// The hub's answer itself is tested in apps/hub/src/fleet-view/explain.integration.spec.ts; here: the
// arguments and how a person reads the answer.

const view: ExplainView = {
  cluster: 'eu1',
  appSet: 'web',
  at: '2026-12-02T15:00:00.000Z',
  matched: true,
  appSetStatus: { status: 'Ready', error: null, heldMessage: null },
  generators: [
    {
      index: 0,
      path: 'spec.generators[0]',
      type: 'clusters',
      verdict: 'matched',
      reasons: [],
      selectors: [{ path: 'spec.generators[0].clusters.selector', matched: true, unmet: [] }],
      produced: 2,
      kept: 2,
      targets: ['web-eu1'],
    },
    {
      index: 1,
      path: 'spec.generators[1]',
      type: 'clusters',
      verdict: 'not-matched',
      reasons: [
        'cluster labels do not match spec.generators[1].clusters.selector: tier Exists (cluster has no "tier" label)',
      ],
      selectors: [
        {
          path: 'spec.generators[1].clusters.selector',
          matched: false,
          unmet: [{ field: 'matchExpressions[0]', requirement: 'tier Exists', actual: 'no "tier" label' }],
        },
      ],
      produced: 0,
      kept: 0,
      targets: [],
    },
  ],
  targets: [
    {
      name: 'web-eu1',
      generator: 'spec.generators[0]',
      params: { name: 'eu1', 'values.prefix': 'edge-' },
      source: {
        repoURL: 'https://git.example/web.git',
        path: 'web',
        targetRevision: 'main',
        kustomize: { namePrefix: 'edge-' },
      },
      destination: { name: 'eu1', namespace: 'web' },
      resolvedRevision: '0123456789abcdef0123456789abcdef01234567',
      stored: {
        desiredRevision: '0123456789abcdef0123456789abcdef01234567',
        bundleDigest: 'sha256:abc',
        lastSyncedRevision: null,
        lastSyncedDigest: null,
        health: 'Unknown',
      },
      render: { renderer: 'kustomize', deterministic: true },
      holds: [
        {
          kind: 'sync-window',
          message: 'automatic syncs are closed by freeze; next open 2026-12-03T06:00:00.000Z',
        },
      ],
    },
  ],
};

describe('flotilla explain', () => {
  it('prints the verdict, each generator with its selector, and each target with values and holds', () => {
    const text = explainText(view);
    expect(text.split('\n')[0]).toBe('cluster eu1 · appset web: MATCHED (appset Ready)');
    expect(text).toContain('[0] clusters  matched → web-eu1   (2 parameter sets, 2 kept)');
    expect(text).toContain(
      'selector spec.generators[1].clusters.selector: failed: tier Exists (cluster has no "tier" label)',
    );
    expect(text).toContain('source     https://git.example/web.git path web @ main → 0123456789ab');
    expect(text).toContain('values     name=eu1, values.prefix=edge-');
    expect(text).toContain('kustomize  {"namePrefix":"edge-"}');
    expect(text).toContain('render     kustomize, deterministic');
    expect(text).toContain('hold       sync-window: automatic syncs are closed by freeze');
  });

  it.each([
    [['--cluster', 'eu1'], '--cluster and --appset are required'],
    [['--appset', 'web'], '--cluster and --appset are required'],
    [['--cluster', 'eu1', '--appset', 'web', 'extra'], '--cluster and --appset are required'],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`flotilla explain: ${message}`);
  });

  it('exits 1 naming the URL when no hub listens there', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(run, ['--cluster', 'eu1', '--appset', 'web', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`flotilla explain: cannot reach the hub at ${hub}`);
  });
});
