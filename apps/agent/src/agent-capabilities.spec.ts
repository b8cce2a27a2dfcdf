import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness, pollOptions as poll } from './testing/agent-harness.js';

// The agent reads its cluster's discovery (kube-sim serves /version, /api and /apis as the apiserver
// does) and tells the hub, which renders the cluster's charts with it as .Capabilities.

describe("agent: reports its cluster's capabilities to the hub", () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('reports the Kubernetes version and served group/versions at start, and again when a CRD adds one', async () => {
    h.hub.setAssignments([]);
    // Discovery is read again on every poll here, and sent only when it changed.
    await h.runAgent({ capabilitiesEveryMs: 1 });
    await expect.poll(() => h.hub.capabilityReports.length, poll).toBe(1);
    const first = h.hub.capabilityReports[0];
    expect(first?.kubeVersion).toBe('v1.32.0');
    expect(first?.apiVersions).toEqual(expect.arrayContaining(['v1', 'apps/v1', 'batch/v1']));
    expect(first?.apiVersions).toEqual([...new Set(first?.apiVersions)].sort());
    expect(first?.apiVersions).not.toContain('example.com/v1');

    await h.k8s.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget' },
        scope: 'Namespaced',
        versions: [
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    } as never);
    await expect.poll(() => h.hub.capabilityReports.at(-1)?.apiVersions, poll).toContain('example.com/v1');
    // Two reports only: the polls between found nothing new to say.
    expect(h.hub.capabilityReports).toHaveLength(2);
  });
});
