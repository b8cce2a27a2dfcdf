import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_API, type KubeObject } from '@flotilla/contract';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { Database } from '../db/database.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';
import { waitForIdleQueues } from '../testing/wait-for-idle.js';

// Per-cluster .Capabilities: each agent reports its cluster's discovery and the hub renders that
// cluster's charts with it — real PostgreSQL, Redis, Git and `helm template`, the agent protocol
// spoken by hand for two clusters.

const CHART = {
  'charts/caps/Chart.yaml': 'apiVersion: v2\nname: caps\nversion: 0.1.0\n',
  'charts/caps/templates/config.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  {{- if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version }}
  ingress: "networking.k8s.io/v1"
  {{- else }}
  ingress: "extensions/v1beta1"
  {{- end }}
  {{- if .Capabilities.APIVersions.Has "example.com/v1" }}
  widgets: "served"
  {{- end }}
`,
};

let fleet: TwoClusterFleet;
let db: Database;

const APPSET = {
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'ApplicationSet',
  metadata: { name: 'caps' },
  spec: {
    generators: [{ list: { elements: [{ cluster: 'eu-1' }, { cluster: 'us-1' }] } }],
    template: {
      metadata: { name: 'caps-{{cluster}}' },
      spec: {
        source: { repoURL: '', targetRevision: 'main', path: 'charts/caps' },
        destination: { name: '{{cluster}}', namespace: 'web' },
      },
    },
  },
};

/** The ConfigMap data each target's current bundle holds, by target name. */
async function rendered(): Promise<Record<string, Record<string, string> | undefined>> {
  const targets = await db.prisma.target.findMany({
    where: { appSet: { name: 'caps' } },
    orderBy: { name: 'asc' },
  });
  const out: Record<string, Record<string, string> | undefined> = {};
  for (const t of targets) {
    const b = await db.prisma.bundle.findUnique({ where: { digest: t.bundleDigest ?? '' } });
    const cm = ((b?.manifests ?? []) as unknown as KubeObject[]).find((o) => o.kind === 'ConfigMap');
    out[t.name] = (cm as { data?: Record<string, string> } | undefined)?.data;
  }
  return out;
}

const digests = async () =>
  (await db.prisma.target.findMany({ where: { appSet: { name: 'caps' } }, orderBy: { name: 'asc' } })).map(
    (t) => t.bundleDigest,
  );

beforeAll(async () => {
  fleet = await startTwoClusterFleet();
  db = fleet.hub.app.get(Database);
  fleet.repo.commit(CHART);
  const repo = await db.prisma.repository.findFirstOrThrow({ where: { url: fleet.repo.url } });
  expect((await fleet.hub.app.get(RepositoriesService).syncNow(repo.id)).ok).toBe(true);
  const doc = structuredClone(APPSET);
  doc.spec.template.spec.source.repoURL = fleet.repo.url;
  expect((await fleet.call('POST', '/api/v1/appsets', doc)).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await fleet?.close();
});

describe("charts render with their cluster's reported capabilities", () => {
  it('before any report both clusters render with HELM_KUBE_VERSION and share one bundle', async () => {
    await expect.poll(rendered, { timeout: 60_000 }).toEqual({
      'caps-eu-1': { kube: 'v1.32.0', ingress: 'networking.k8s.io/v1' },
      'caps-us-1': { kube: 'v1.32.0', ingress: 'networking.k8s.io/v1' },
    });
    const [eu, us] = await digests();
    expect(eu).toBe(us);
  });

  it('two clusters reporting different versions and API versions each get their own render', async () => {
    await waitForIdleQueues(fleet.hub.app);
    const plainBefore = await db.prisma.applicationSet.findUniqueOrThrow({ where: { name: 'web' } });
    const eu = await fleet.agent<{ changed: boolean }>('eu-1', 'PUT', AGENT_API.capabilities, {
      kubeVersion: 'v1.29.3',
      apiVersions: ['v1', 'apps/v1'],
    });
    expect(eu).toMatchObject({ status: 200, body: { changed: true } });
    const us = await fleet.agent('us-1', 'PUT', AGENT_API.capabilities, {
      kubeVersion: 'v1.31.2',
      apiVersions: ['v1', 'apps/v1', 'example.com/v1'],
    });
    expect(us.status).toBe(200);
    await expect.poll(rendered, { timeout: 60_000 }).toEqual({
      'caps-eu-1': { kube: 'v1.29.3', ingress: 'extensions/v1beta1' },
      'caps-us-1': { kube: 'v1.31.2', ingress: 'networking.k8s.io/v1', widgets: 'served' },
    });
    const clusters = await fleet.call<{ name: string; capabilities: { kubeVersion: string } | null }[]>(
      'GET',
      '/api/v1/clusters',
    );
    expect(clusters.body.map((c) => [c.name, c.capabilities?.kubeVersion])).toEqual([
      ['eu-1', 'v1.29.3'],
      ['us-1', 'v1.31.2'],
    ]);
    const audit = await db.prisma.auditEvent.findMany({ where: { action: 'cluster.capabilities-changed' } });
    expect(audit.map((a) => a.scope).sort()).toEqual(['cluster:eu-1', 'cluster:us-1']);
    // The plain-YAML appset renders no chart: the reports did not expand it again.
    await waitForIdleQueues(fleet.hub.app);
    const plainAfter = await db.prisma.applicationSet.findUniqueOrThrow({ where: { name: 'web' } });
    expect(plainAfter.lastExpandedAt).toEqual(plainBefore.lastExpandedAt);
  });

  it('the same report again changes nothing; clusters reporting the same capabilities share a render again', async () => {
    const again = await fleet.agent('eu-1', 'PUT', AGENT_API.capabilities, {
      kubeVersion: 'v1.29.3',
      apiVersions: ['apps/v1', 'v1', 'v1'],
    });
    expect(again.body).toEqual({ changed: false });
    await fleet.agent('us-1', 'PUT', AGENT_API.capabilities, {
      kubeVersion: 'v1.29.3',
      apiVersions: ['v1', 'apps/v1'],
    });
    await expect.poll(async () => new Set(await digests()).size, { timeout: 60_000 }).toBe(1);
    expect((await rendered())['caps-us-1']).toEqual({ kube: 'v1.29.3', ingress: 'extensions/v1beta1' });
  });

  it('a malformed report is refused naming the field and changes nothing', async () => {
    const bad = await fleet.agent<{ code: string; path: string }>('eu-1', 'PUT', AGENT_API.capabilities, {
      kubeVersion: 'latest',
      apiVersions: ['v1'],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('kubeVersion');
    const badApi = await fleet.agent<{ path: string }>('eu-1', 'PUT', AGENT_API.capabilities, {
      kubeVersion: 'v1.30.0',
      apiVersions: ['v1', 'not a version'],
    });
    expect([badApi.status, badApi.body.path]).toEqual([400, 'apiVersions[1]']);
    const row = await db.prisma.cluster.findUniqueOrThrow({ where: { name: 'eu-1' } });
    expect([row.kubeVersion, row.apiVersions]).toEqual(['v1.29.3', ['apps/v1', 'v1']]);
  });
});
