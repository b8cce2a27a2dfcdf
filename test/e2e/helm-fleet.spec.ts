import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestHelmRepository, type TestChart, type TestHelmRepository } from '@flotilla/hub/testing';
import type { TargetListItemView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuestbookFleet } from '../support/guestbook-fleet.js';

/**
 * Helm end to end, all real processes: a chart from a Helm repository on 127.0.0.1 with its values
 * in a Git repository behind `git daemon` (a multi-source application), rendered by the hub with
 * each cluster's own Kubernetes version — two simulated clusters report v1.30 and v1.32 — and
 * applied by their agents. A values commit rolls out; a newer chart within the range is picked up
 * by a refresh and recorded on the targets.
 */
function webChart(version: string): TestChart {
  return {
    name: 'web',
    version,
    files: {
      'values.yaml': 'greeting: chart-default\n',
      'templates/config.yaml': [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: web-config',
        'data:',
        '  chart: {{ .Chart.Version | quote }}',
        '  greeting: {{ .Values.greeting | quote }}',
        '  kube: {{ .Capabilities.KubeVersion.Version | quote }}',
        // A capability-dependent object: what a chart does differently on newer clusters.
        '  api: {{ if semverCompare ">=1.31-0" .Capabilities.KubeVersion.Version }}"new"{{ else }}"old"{{ end }}',
        '',
      ].join('\n'),
    },
  };
}

describe('a Helm chart from a repository with values from Git, across clusters of two Kubernetes versions', () => {
  let e2e: GuestbookFleet;
  let charts: TestHelmRepository;
  const versions = ['v1.30.4', 'v1.32.1'];

  beforeAll(async () => {
    charts = await startTestHelmRepository([webChart('1.0.0')]);
    e2e = await GuestbookFleet.start({
      name: 'helmfleet',
      clusters: 2,
      pollSeconds: 1,
      kubernetesVersion: (i) => versions[i],
      // The repository's index is read afresh by every expansion, so the refresh below sees 1.1.0
      // at once (by default an index is reused for 60 s).
      hubEnv: { HELM_REPOSITORY_CACHE_SECONDS: '0' },
    });
  }, 120_000);
  afterAll(async () => {
    await e2e?.stop();
    await charts?.stop();
  });

  /** Each cluster's `web-config` data (`{}` until it exists). */
  const configs = async (): Promise<Record<string, string>[]> =>
    Promise.all(
      e2e.fleet.clusters.map(async (_, i) => {
        const got = await e2e.kubectl(i, '-n', 'web', 'get', 'configmap', 'web-config', '-o', 'json');
        return got.code === 0
          ? ((JSON.parse(got.stdout) as { data: Record<string, string> }).data ?? {})
          : {};
      }),
    );

  const commitValues = async (greeting: string): Promise<void> => {
    mkdirSync(join(e2e.repoDir, 'values'), { recursive: true });
    writeFileSync(join(e2e.repoDir, 'values', 'web.yaml'), `greeting: ${greeting}\n`);
    await e2e.repo.add('.').commit(`web values: ${greeting}`);
  };

  it('renders each cluster with its own capabilities, rolls a values commit out and picks up a newer chart', async () => {
    const { fleet } = e2e;
    await commitValues('from-git-1');
    await fleet.api.createAppSet({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        generators: [{ list: { elements: fleet.clusters.map((c) => ({ cluster: c.name })) } }],
        template: {
          metadata: { name: '{{cluster}}-web' },
          spec: {
            project: 'default',
            sources: [
              {
                repoURL: charts.url,
                chart: 'web',
                targetRevision: '^1.0.0',
                helm: { valueFiles: ['$values/values/web.yaml'] },
              },
              { repoURL: e2e.repoUrl, targetRevision: 'main', ref: 'values' },
            ],
            destination: { name: '{{cluster}}', namespace: 'web' },
            syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['CreateNamespace=true'] },
          },
        },
      },
    });

    // The agents report their clusters' versions; each cluster ends up rendered with its own.
    await expect.poll(configs, { timeout: 90_000, interval: 500 }).toEqual([
      { chart: '1.0.0', greeting: 'from-git-1', kube: 'v1.30.4', api: 'old' },
      { chart: '1.0.0', greeting: 'from-git-1', kube: 'v1.32.1', api: 'new' },
    ]);

    // A values commit in Git rolls out to both.
    await commitValues('from-git-2');
    await expect
      .poll(async () => (await configs()).map((d) => d['greeting']), { timeout: 60_000, interval: 500 })
      .toEqual(['from-git-2', 'from-git-2']);

    // A newer chart within ^1.0.0 is picked up by the next expansion (a refresh here) and recorded.
    charts.publish(webChart('1.1.0'));
    charts.publish(webChart('2.0.0'));
    await fleet.api.request('POST', '/api/v1/appsets/web/refresh', { reason: 'chart 1.1.0 published' });
    await expect
      .poll(async () => (await configs()).map((d) => d['chart']), { timeout: 60_000, interval: 500 })
      .toEqual(['1.1.0', '1.1.0']);
    const targets = await fleet.api.request<TargetListItemView[]>('GET', '/api/v1/targets?appSet=web');
    expect(targets).toHaveLength(2);
    for (const t of targets) {
      expect(t.sources?.find((s) => s.chart === 'web')).toMatchObject({
        targetRevision: '^1.0.0',
        revision: '1.1.0',
      });
    }
  }, 240_000);
});
