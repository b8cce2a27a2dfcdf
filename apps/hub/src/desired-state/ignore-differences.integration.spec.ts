import 'reflect-metadata';
import type { AssignmentsResponse } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// An ApplicationSet's `ignoreDifferences` and `RespectIgnoreDifferences=true` on the real hub
// (PostgreSQL, Redis, Git): rendered per target, checked with field paths, and carried into each
// cluster's assignment. The agent's side is spoken by hand.

let fleet: TwoClusterFleet;

interface AppSetView {
  status: string;
  error: { code: string; message: string; path?: string } | null;
  lastExpandedAt: string | null;
}

/** The fleet's `web` appset with a per-cluster parameter and the given template additions. */
function webAppSet(elements: Record<string, string>[], spec: Record<string, unknown>) {
  return {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: 'web' },
    spec: {
      generators: [{ list: { elements } }],
      template: {
        metadata: { name: 'web-{{cluster}}' },
        spec: {
          source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
          destination: { name: '{{cluster}}', namespace: 'web' },
          ...spec,
        },
      },
    },
  };
}

const assignmentOf = async (cluster: 'eu-1' | 'us-1') => {
  const r = await fleet.agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments?wait=0');
  expect(r.status).toBe(200);
  const [only] = r.body.assignments;
  if (!only) throw new Error(`no assignment for ${cluster}`);
  return only;
};

/** Waits until the appset has been expanded after `since` (bounded). */
async function expandedAfter(since: string | null): Promise<AppSetView> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await fleet.call<AppSetView>('GET', '/api/v1/appsets/web');
    const at = r.body.lastExpandedAt;
    if (r.body.status !== 'Pending' && at !== null && (since === null || at > since)) return r.body;
    if (Date.now() > deadline) throw new Error(`appset web not re-expanded: ${JSON.stringify(r.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function lastExpandedAt(): Promise<string | null> {
  return (await fleet.call<AppSetView>('GET', '/api/v1/appsets/web')).body.lastExpandedAt;
}

const elements = [
  { cluster: 'eu-1', pointer: '/data/owner' },
  { cluster: 'us-1', pointer: '/data/region' },
];

describe('ignoreDifferences from the ApplicationSet to the agent', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('starts with no rules and no RespectIgnoreDifferences', async () => {
    const a = await assignmentOf('eu-1');
    expect(a.ignoreDifferences).toEqual([]);
    expect(a.syncPolicy).not.toHaveProperty('respectIgnoreDifferences');
  });

  it("puts each target's rendered rules and the sync option into its cluster's assignment", async () => {
    const since = await lastExpandedAt();
    const applied = await fleet.call(
      'POST',
      '/api/v1/appsets',
      webAppSet(elements, {
        syncPolicy: {
          automated: { selfHeal: true, prune: true },
          syncOptions: ['CreateNamespace=true', 'RespectIgnoreDifferences=true'],
        },
        ignoreDifferences: [
          { group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas'] },
          { kind: 'ConfigMap', name: 'web-config', jsonPointers: ['{{pointer}}'] },
          { kind: 'Secret', jqPathExpressions: ['.data.token'], managedFieldsManagers: ['vault-agent'] },
        ],
      }),
    );
    expect(applied.status).toBe(200);
    expect((await expandedAfter(since)).status).toBe('Ready');

    const eu = await assignmentOf('eu-1');
    expect(eu.syncPolicy).toEqual({
      automated: true,
      selfHeal: true,
      prune: true,
      allowEmpty: false,
      respectIgnoreDifferences: true,
      createNamespace: true,
    });
    expect(eu.ignoreDifferences).toEqual([
      {
        group: 'apps',
        kind: 'Deployment',
        jsonPointers: ['/spec/replicas'],
        jqPathExpressions: [],
        managedFieldsManagers: [],
      },
      {
        group: '',
        kind: 'ConfigMap',
        name: 'web-config',
        jsonPointers: ['/data/owner'],
        jqPathExpressions: [],
        managedFieldsManagers: [],
      },
      {
        group: '',
        kind: 'Secret',
        jsonPointers: [],
        jqPathExpressions: ['.data.token'],
        managedFieldsManagers: ['vault-agent'],
      },
    ]);
    // Rendered per target: us-1 ignores its own field.
    const us = await assignmentOf('us-1');
    expect(us.ignoreDifferences[1]?.jsonPointers).toEqual(['/data/region']);
  });

  it('refuses a literal bad rule at submission with its field path, changing nothing', async () => {
    const before = await fleet.call<{ document: unknown }>('GET', '/api/v1/appsets/web');
    const r = await fleet.call<{ code: string; message: string; path: string }>(
      'POST',
      '/api/v1/appsets',
      webAppSet(elements, {
        ignoreDifferences: [{ kind: 'Deployment', jsonPointers: ['/spec/replicas', 'spec/paused'] }],
      }),
    );
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid-ignore-rule');
    expect(r.body.path).toBe('spec.template.spec.ignoreDifferences[0].jsonPointers[1]');
    expect(r.body.message).toContain("'spec/paused' is not a JSON pointer");
    const after = await fleet.call<{ document: unknown }>('GET', '/api/v1/appsets/web');
    expect(after.body.document).toEqual(before.body.document);
  });

  it('fails the expansion of a rule that renders bad for one target, leaving every assignment as it was', async () => {
    const euBefore = await assignmentOf('eu-1');
    const usBefore = await assignmentOf('us-1');
    const since = await lastExpandedAt();
    const applied = await fleet.call(
      'POST',
      '/api/v1/appsets',
      webAppSet(
        [
          { cluster: 'eu-1', pointer: '/data/owner' },
          { cluster: 'us-1', pointer: 'data/region' },
        ],
        {
          ignoreDifferences: [
            { kind: 'Deployment', jsonPointers: ['/spec/replicas'] },
            { kind: 'ConfigMap', jsonPointers: ['/data/other', '{{pointer}}'] },
          ],
        },
      ),
    );
    expect(applied.status).toBe(200);
    const view = await expandedAfter(since);
    expect(view.status).toBe('Error');
    expect(view.error).toMatchObject({
      code: 'invalid-ignore-rule',
      path: 'spec.template.spec.ignoreDifferences[1].jsonPointers[1]',
    });
    expect(view.error?.message).toContain('target "web-us-1"');
    expect(await assignmentOf('eu-1')).toEqual(euBefore);
    expect(await assignmentOf('us-1')).toEqual(usBefore);
  });
});
