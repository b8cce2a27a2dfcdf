import { describe, expect, it } from 'vitest';
import { clusterCapabilitiesSchema } from './agent-protocol.js';

describe('clusterCapabilitiesSchema', () => {
  it('takes what real clusters serve: vendor versions, CRD versions that are any DNS label', () => {
    for (const kubeVersion of ['v1.31.4', 'v1.30.2-eks-1a2b3c4', 'v1.29.1+k3s1', '1.32.0']) {
      expect(clusterCapabilitiesSchema.safeParse({ kubeVersion, apiVersions: [] }).success, kubeVersion).toBe(
        true,
      );
    }
    const apiVersions = [
      'v1',
      'apps/v1',
      'flowcontrol.apiserver.k8s.io/v1beta3',
      'example.com/stable',
      'x-y.io/v2',
    ];
    expect(clusterCapabilitiesSchema.parse({ kubeVersion: 'v1.31.0', apiVersions }).apiVersions).toEqual(
      apiVersions,
    );
  });

  it('refuses what is not a version or a group/version, naming the entry', () => {
    const bad = (body: unknown) => clusterCapabilitiesSchema.safeParse(body).error?.issues[0]?.path;
    expect(bad({ kubeVersion: 'latest', apiVersions: [] })).toEqual(['kubeVersion']);
    expect(bad({ kubeVersion: 'v1.31.0', apiVersions: ['v1', 'Apps/V1'] })).toEqual(['apiVersions', 1]);
    expect(bad({ kubeVersion: 'v1.31.0', apiVersions: ['apps/v1/Deployment'] })).toEqual(['apiVersions', 0]);
  });
});
