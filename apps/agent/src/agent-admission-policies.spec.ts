import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type KubeObject } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

// The agent's own check: the admission policies in an assignment are evaluated again before
// anything is applied (with the live object as oldObject), and a Deny applies nothing of the bundle.

const manifests = loadFixture('bundle-web.yaml');
const RULES =
  '{resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}]}';

/** A policy and its binding (Deny), as the hub sends them. */
const policy = (name: string, expression: string, message: string, breakGlass = false): KubeObject[] =>
  parseAllDocuments(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ${name}
${breakGlass ? '  annotations: {flotilla.dev/break-glass: allow}\n' : ''}spec:
  matchConstraints: ${RULES}
  validations: [{expression: ${JSON.stringify(expression)}, message: ${JSON.stringify(message)}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ${name}}
spec: {policyName: ${name}, validationActions: [Deny]}
`).map((d) => d.toJS() as KubeObject);

describe('agent: admission policies in the assignment', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('policed');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('applies nothing of a bundle an assignment policy denies, naming the policy and the object', async () => {
    const digest = h.hub.addBundle(manifests);
    const documents = policy(
      'allowed-registry',
      "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))",
      'images must come from registry.example.com',
    );
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, policies: { documents } })]);
    await h.runAgent();
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    const sync = h.syncs()[0];
    // A failed sync is retried (retry policy), and every retry is refused the same way.
    expect(sync?.message).toMatch(/^1 object\(s\) denied by admission policies; nothing applied/);
    expect(sync).toMatchObject({
      outcome: 'Failed',
      resources: [
        {
          group: 'apps',
          kind: 'Deployment',
          namespace: 'shop',
          name: 'web',
          action: 'failed',
          message:
            'policy allowed-registry (binding allowed-registry) denies Deployment shop/web: images must come from registry.example.com',
        },
      ],
    });
    // Nothing of the bundle was applied: not even the ConfigMap that comes first.
    expect(await h.read('ConfigMap', 'web-config')).toBeUndefined();
    expect(await h.read('Deployment', 'web')).toBeUndefined();
  });

  it('judges an update with the live object as oldObject', async () => {
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'rev-2' })]);
    await expect.poll(() => h.replicas(), poll).toBe(2);
    const fewer = manifests.map((m) =>
      m.kind === 'Deployment' ? { ...m, spec: { ...(m['spec'] as object), replicas: 1 } } : m,
    );
    const documents = policy(
      'no-scale-down',
      'oldObject == null || object.spec.replicas >= oldObject.spec.replicas',
      'replicas may not shrink here',
    );
    h.hub.setAssignments([
      h.assignment({ bundleDigest: h.hub.addBundle(fewer), revision: 'rev-3', policies: { documents } }),
    ]);
    const rev3 = () => h.syncs().find((s) => s.revision === 'rev-3');
    await expect.poll(() => rev3()?.outcome, poll).toBe('Failed');
    expect(rev3()?.resources[0]?.message).toBe(
      'policy no-scale-down (binding no-scale-down) denies Deployment shop/web: replicas may not shrink here',
    );
    expect(await h.replicas()).toBe(2);
  });

  it('lets a Deny through under an active break-glass only when the policy allows it', async () => {
    const bundle = h.hub.addBundle(
      manifests.map((m) =>
        m.kind === 'Deployment' ? { ...m, spec: { ...(m['spec'] as object), replicas: 3 } } : m,
      ),
    );
    const breakGlass = [
      {
        id: 'bg-9',
        reason: 'incident 9',
        expiresAt: '2030-01-01T00:00:00Z',
        allowSyncOutsideWindows: true,
        pauseSelfHeal: false,
      },
    ];
    const expression =
      "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))";
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: bundle,
        revision: 'rev-4',
        breakGlass,
        policies: { documents: policy('allowed-registry', expression, 'registry.example.com only') },
      }),
    ]);
    const rev = (r: string) => () => h.syncs().find((s) => s.revision === r)?.outcome;
    await expect.poll(rev('rev-4'), poll).toBe('Failed');
    h.hub.setAssignments([
      h.assignment({
        bundleDigest: bundle,
        revision: 'rev-5',
        breakGlass,
        policies: { documents: policy('allowed-registry', expression, 'registry.example.com only', true) },
      }),
    ]);
    await expect.poll(rev('rev-5'), poll).toBe('Succeeded');
    expect(await h.replicas()).toBe(3);
  });
});
