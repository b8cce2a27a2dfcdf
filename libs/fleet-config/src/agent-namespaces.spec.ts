import { describe, expect, it } from 'vitest';
import { checkAgentNamespaces } from './agent-namespaces.js';

describe('checkAgentNamespaces', () => {
  const limit = ['shop', 'web'];

  it('lets namespaced objects in the listed namespaces through', () => {
    expect(
      checkAgentNamespaces(limit, {
        group: 'apps',
        kind: 'Deployment',
        name: 'w',
        namespaced: true,
        namespace: 'web',
      }),
    ).toBeNull();
  });

  it('refuses a cluster-scoped object, naming the kind and the limit', () => {
    expect(
      checkAgentNamespaces(limit, {
        group: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'reader',
        namespaced: false,
      }),
    ).toBe(
      "rbac.authorization.k8s.io/ClusterRole 'reader': cluster-scoped kind ClusterRole refused: this agent is limited to namespace(s) shop, web (FLOTILLA_NAMESPACES) and has no cluster-wide rights",
    );
  });

  it('refuses an object in another namespace, naming that namespace', () => {
    expect(
      checkAgentNamespaces(limit, {
        group: '',
        kind: 'ConfigMap',
        name: 'c',
        namespaced: true,
        namespace: 'kube-system',
      }),
    ).toBe(
      "ConfigMap 'c': namespace 'kube-system' refused: this agent is limited to namespace(s) shop, web (FLOTILLA_NAMESPACES) and has no cluster-wide rights",
    );
  });
});
