import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PatchStrategy } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type HealthReport,
  type HealthRule,
  type KubeObject,
  type ReportBatch,
  assignmentsResponseSchema,
} from '@flotilla/contract';
import { type Agent } from './agent.js';
import { createKubeClient } from './kube/kube-client.js';
import { AgentHarness, pollOptions as poll } from './testing/agent-harness.js';

// Custom health rules from the hub's assignments judge a custom resource everywhere the agent judges
// health: a wave waits for a cert-manager-like Certificate its rule calls Progressing, the target's
// health report names it, and the rules kept on disk judge while the hub is away. Without a rule the
// Certificate has no health at all, as in Argo CD (kube-sim serves the CRD).

const certificateCrd: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'certificates.cert-manager.io' },
  spec: {
    group: 'cert-manager.io',
    scope: 'Namespaced',
    names: {
      plural: 'certificates',
      singular: 'certificate',
      kind: 'Certificate',
      listKind: 'CertificateList',
    },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

/** Argo CD's bundled cert-manager check, in short: Ready decides, no status yet is Progressing. */
const CERTIFICATE_RULE = `local hs = { status = "Progressing", message = "Waiting for certificate" }
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Ready" then
      hs.status = condition.status == "True" and "Healthy" or "Degraded"
      hs.message = condition.message
    end
  end
end
return hs
`;
const rules: HealthRule[] = [
  {
    key: 'cert-manager.io/Certificate',
    script: CERTIFICATE_RULE,
    source: { origin: 'fleet', file: 'resource_customizations/cert-manager.io/Certificate/health.lua' },
  },
];

const wave = (n: number) => ({ 'argocd.argoproj.io/sync-wave': String(n) });
/** The Certificate in wave 0 and a ConfigMap `name` in wave 1, which only a healthy wave 0 lets through. */
const bundle = (name: string): KubeObject[] => [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
  {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: 'web-tls', namespace: 'shop', annotations: wave(0) },
    spec: { secretName: 'web-tls', dnsNames: ['web.example.com'] },
  },
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'shop', annotations: wave(1) },
    data: { certificate: 'web-tls' },
  },
];

const certificateHealth = (r: HealthReport) => r.resources.find((x) => x.kind === 'Certificate');

describe('agent: custom health rules from the assignments', () => {
  let h: AgentHarness;
  let agent: Agent;
  const stateDir = () => join(h.dir, 'state');

  beforeAll(async () => {
    h = await AgentHarness.start('rules');
    // Through the agent's client: client-node's typed CRD model would drop the x-kubernetes-* keys.
    await createKubeClient(h.kc).apply(certificateCrd);
  });
  afterAll(async () => {
    await h.stop();
  });

  const setCertificateStatus = (ready: 'True' | 'False', message: string) =>
    h.k8s.patch(
      {
        apiVersion: 'cert-manager.io/v1',
        kind: 'Certificate',
        metadata: { name: 'web-tls', namespace: 'shop' },
        status: { conditions: [{ type: 'Ready', status: ready, message }] },
      },
      undefined,
      undefined,
      'cert-manager',
      undefined,
      PatchStrategy.MergePatch,
    );

  it('without a rule a Certificate has no health: its wave does not wait, the target leaves it out', async () => {
    const digest = h.hub.addBundle(bundle('after-cert'));
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    agent = await h.runAgent({ waveTimeoutSeconds: 2 });
    await expect.poll(() => h.syncs().at(-1)?.outcome, poll).toBe('Succeeded');
    expect(await h.read('ConfigMap', 'after-cert')).toBeDefined();
    await expect.poll(() => h.hub.reportsOf('health').at(-1)?.status, poll).toBe('Healthy');
    expect(h.hub.reportsOf('health').some((r) => certificateHealth(r) !== undefined)).toBe(false);
  });

  it('with the rule a wave waits for the Certificate until its status says Ready', async () => {
    const syncsBefore = h.syncs().length;
    h.hub.setHealthRules(rules);
    // The running target is judged again with the rule: the Certificate has no status yet.
    await expect
      .poll(() => h.hub.reportsOf('health').map((r) => certificateHealth(r)?.status), poll)
      .toContain('Progressing');
    expect(h.hub.reportsOf('health').at(-1)).toMatchObject({
      status: 'Progressing',
      resources: expect.arrayContaining([
        expect.objectContaining({
          kind: 'Certificate',
          status: 'Progressing',
          message: 'Waiting for certificate',
        }),
      ]) as unknown,
    });

    // A new revision: wave 0 waits for the Certificate (out of time here), so wave 1 is never applied.
    const digest = h.hub.addBundle(bundle('after-cert-2'));
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: digest,
        revision: 'rev-2',
        syncPolicy: {
          automated: true,
          selfHeal: true,
          prune: true,
          retry: { limit: -1, backoff: { durationMs: 200, factor: 1, maxDurationMs: 200 } },
        },
      }),
    ]);
    await expect.poll(() => h.syncs().slice(syncsBefore)[0]?.outcome, poll).toBe('Failed');
    const failed = h.syncs().slice(syncsBefore)[0];
    expect(failed?.message).toContain('web-tls Progressing (Waiting for certificate)');
    expect(await h.read('ConfigMap', 'after-cert-2')).toBeUndefined();

    // cert-manager says Ready: the next try's wave 0 passes and wave 1 is applied.
    await setCertificateStatus('True', 'Certificate is up to date and has not expired');
    await expect.poll(() => h.syncs().at(-1)?.outcome, poll).toBe('Succeeded');
    expect(h.syncs().at(-1)?.revision).toBe('rev-2');
    expect(await h.read('ConfigMap', 'after-cert-2')).toBeDefined();
    await expect
      .poll(() => {
        const last = h.hub.reportsOf('health').at(-1);
        return last && [last.status, certificateHealth(last)?.status];
      }, poll)
      .toEqual(['Healthy', 'Healthy']);
  });

  it('keeps the rules with its assignments on disk and judges with them while the hub is away', async () => {
    const saved = assignmentsResponseSchema.parse(
      JSON.parse(await readFile(join(stateDir(), 'assignments.json'), 'utf8')),
    );
    expect(saved.healthRules).toEqual(rules);

    await agent.stop();
    await h.hub.stop();
    await h.runAgent({ stateDir: stateDir(), waveTimeoutSeconds: 2 });
    await setCertificateStatus('False', 'Issuer web-issuer not found');

    // What the agent says is queued on its disk until the hub is back; the rule made it Degraded.
    const reportsDir = join(stateDir(), 'reports');
    await expect
      .poll(async () => {
        const verdicts: string[] = [];
        for (const file of (await readdir(reportsDir)).filter((f) => f.endsWith('.json'))) {
          const batch = JSON.parse(await readFile(join(reportsDir, file), 'utf8')) as ReportBatch;
          for (const r of batch.reports) {
            const c = r.type === 'health' ? certificateHealth(r) : undefined;
            if (c) verdicts.push(`${c.status}: ${c.message}`);
          }
        }
        return verdicts;
      }, poll)
      .toContain('Degraded: Issuer web-issuer not found');
  });
});
