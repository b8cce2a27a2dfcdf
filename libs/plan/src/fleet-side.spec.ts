import { describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { type ClusterInfo } from '@flotilla/generators';
import {
  buildFleetSide,
  PlanSideError,
  sharedRenderKey,
  type PlanCandidate,
  type SideReader,
} from './fleet-side.js';

// One side built from fleet files and an inventory, the caller's I/O given as plain functions: what
// the CLI (checkouts) and the hub (mirrors) both rely on.

const APPSET = `apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata: {name: web}
spec:
  generators: [{clusters: {selector: {matchLabels: {env: prod}}}}]
  template:
    metadata: {name: 'web-{{name}}'}
    spec:
      source: {repoURL: 'https://git.example/web.git', targetRevision: main, path: web}
      destination: {name: '{{name}}', namespace: web}
`;

const GROUP = `apiVersion: flotilla.dev/v1alpha1
kind: ClusterGroup
metadata: {name: prod}
spec:
  clusters: [eu-2]
  labels: {env: prod}
`;

const CLUSTERS: ClusterInfo[] = [
  { name: 'eu-1', server: 'https://eu-1', labels: { env: 'prod' }, annotations: {} },
  { name: 'eu-2', server: 'https://eu-2', labels: {}, annotations: {} },
];

function configMap(name: string): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } };
}

/** A reader that renders one ConfigMap per candidate and counts its renders. */
function reader(overrides: Partial<SideReader> = {}): SideReader & { renders: string[] } {
  const renders: string[] = [];
  return {
    renders,
    repository: () => {
      throw new Error('no git generator here');
    },
    render: (c: PlanCandidate) => {
      renders.push(c.name);
      return Promise.resolve({ digest: `sha256:${c.name}`, objects: [configMap(c.name)] });
    },
    renderKey: (c) => c.name,
    ...overrides,
  };
}

const files = (entries: Record<string, string>) =>
  Object.entries(entries).map(([path, content]) => ({ path, content }));

describe('buildFleetSide', () => {
  it('generates and renders the targets over the inventory, each with its cluster', async () => {
    const r = reader();
    const { side, groups } = await buildFleetSide(
      {
        name: 'head',
        revision: 'abc',
        files: files({ 'web.yaml': APPSET }),
        clusters: CLUSTERS,
        labelledBy: null,
      },
      r,
    );
    expect(groups).toEqual([]);
    expect(side.revision).toBe('abc');
    expect(
      side.targets.map((t) => [t.appSet, t.name, t.cluster, t.clusterServer, t.namespace, t.repoURLs]),
    ).toEqual([['web', 'web-eu-1', 'eu-1', 'https://eu-1', 'web', ['https://git.example/web.git']]]);
    expect(side.clusterLabels.get('eu-2')).toEqual({});
  });

  it("puts this side's ClusterGroup labels on, after taking off those the inventory carries", async () => {
    const withGroup = await buildFleetSide(
      {
        name: 'head',
        revision: null,
        files: files({ 'web.yaml': APPSET, 'groups.yaml': GROUP }),
        clusters: CLUSTERS,
        labelledBy: [],
      },
      reader(),
    );
    expect(withGroup.side.targets.map((t) => t.name)).toEqual(['web-eu-1', 'web-eu-2']);
    expect(withGroup.side.clusterLabels.get('eu-2')).toEqual({ env: 'prod' });
    // The inventory carries the group's label; a side without the group takes it off.
    const labelled = CLUSTERS.map((c) => (c.name === 'eu-2' ? { ...c, labels: { env: 'prod' } } : c));
    const without = await buildFleetSide(
      {
        name: 'head',
        revision: null,
        files: files({ 'web.yaml': APPSET }),
        clusters: labelled,
        labelledBy: withGroup.groups,
      },
      reader(),
    );
    expect(without.side.targets.map((t) => t.name)).toEqual(['web-eu-1']);
  });

  it('renders once per render key', async () => {
    const r = reader({ renderKey: () => 'one' });
    const files2 = files({ 'web.yaml': APPSET, 'groups.yaml': GROUP });
    const { side } = await buildFleetSide(
      { name: 'base', revision: null, files: files2, clusters: CLUSTERS, labelledBy: [] },
      r,
    );
    expect(r.renders).toHaveLength(1);
    expect(side.targets.map((t) => t.digest)).toEqual(['sha256:web-eu-1', 'sha256:web-eu-1']);
  });

  it('refuses an invalid fleet whole, and wraps a render error with its appset and cause', async () => {
    const invalid = buildFleetSide(
      {
        name: 'head',
        revision: '0123456789abcdef',
        files: files({
          'web.yaml': 'apiVersion: flotilla.dev/v1alpha1\nkind: ApplicationSet\nmetadata: {}\n',
        }),
        clusters: CLUSTERS,
        labelledBy: null,
      },
      reader(),
    );
    await expect(invalid).rejects.toMatchObject({ code: 'invalid-fleet', side: 'head' });
    await expect(invalid).rejects.toThrow(/^head \(0123456789ab\): the fleet repository is invalid/);

    const cause = Object.assign(new Error('no such directory'), { code: 'manifest-invalid-source' });
    const failing = buildFleetSide(
      {
        name: 'base',
        revision: null,
        files: files({ 'web.yaml': APPSET }),
        clusters: CLUSTERS,
        labelledBy: null,
      },
      reader({ render: () => Promise.reject(cause) }),
    );
    const err = await failing.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlanSideError);
    expect(err).toMatchObject({ code: 'appset-failed', side: 'base', cause });
    expect((err as Error).message).toBe('base: ApplicationSet web (web.yaml): no such directory');
  });

  it('refuses two targets of one name, as the hub refuses the expansion', async () => {
    const other = APPSET.replace('name: web}', 'name: web-2}');
    const twice = buildFleetSide(
      {
        name: 'head',
        revision: null,
        files: files({ 'web.yaml': APPSET, 'web-2.yaml': other }),
        clusters: CLUSTERS,
        labelledBy: null,
      },
      reader(),
    );
    await expect(twice).rejects.toThrow(
      /two targets are named web-eu-1 \(ApplicationSet web-2 and web\); the hub refuses/,
    );
  });
});

describe('sharedRenderKey', () => {
  const candidate = (name: string, source: Record<string, unknown>): PlanCandidate => ({
    appSet: 'web',
    name,
    cluster: name,
    at: 'targets[0].spec',
    spec: { source, destination: { name, namespace: 'web' } },
  });
  const plain = { repoURL: 'https://git.example/web.git', path: 'web', targetRevision: 'main' };

  it('shares a plain directory between targets, never a chart', () => {
    const notChart = () => false;
    expect(sharedRenderKey(candidate('a', plain), notChart)).toBe(
      sharedRenderKey(candidate('b', plain), notChart),
    );
    const chartDir = () => true;
    expect(sharedRenderKey(candidate('a', plain), chartDir)).not.toBe(
      sharedRenderKey(candidate('b', plain), chartDir),
    );
    const chart = { repoURL: 'https://charts.example', chart: 'web', targetRevision: '1.0.0' };
    expect(sharedRenderKey(candidate('a', chart), notChart)).not.toBe(
      sharedRenderKey(candidate('b', chart), notChart),
    );
  });

  it('asks about the directory and revision each source names', () => {
    const asked: string[] = [];
    sharedRenderKey(candidate('a', plain), (url, path, revision) => {
      asked.push(`${url} ${path} ${revision}`);
      return false;
    });
    expect(asked).toEqual(['https://git.example/web.git web main']);
  });
});
