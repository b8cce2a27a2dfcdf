import { type ProjectRestrictions } from '@flotilla/contract';
import { describe, expect, it } from 'vitest';
import { projectSpecSchema } from './kinds/project.js';
import {
  UNRESTRICTED_PROJECT,
  checkDestination,
  checkObject,
  checkRepository,
  literalRepoFields,
  projectNameOf,
  restrictionsFor,
  scopeFromManifests,
  type ProjectObjectRef,
} from './project-policy.js';

// A team project as a platform team would write it: own repos, own namespaces, prod by label only.
const team = projectSpecSchema.parse({
  sourceRepos: ['https://git.example.com/team-a/*', '!https://git.example.com/team-a/secret'],
  destinations: [
    { cluster: 'dev-*', namespace: 'team-a*' },
    { clusterSelector: { matchLabels: { env: 'prod' } }, namespace: 'team-a' },
  ],
  clusterResourceWhitelist: [{ group: '', kind: 'Namespace' }],
  namespaceResourceBlacklist: [{ group: '', kind: 'ResourceQuota' }],
});
const dev1 = { name: 'dev-1', labels: { env: 'dev' } };
const prod1 = { name: 'prod-eu', labels: { env: 'prod' } };
const stage = { name: 'stage-1', labels: { env: 'stage' } };

describe('checkRepository', () => {
  it.each([
    ['https://git.example.com/team-a/web', null],
    ['https://git.example.com/team-a/web.git', null],
    ['https://git.example.com/team-a/secret', 'repo-not-permitted'],
    ['https://git.example.com/team-b/web', 'repo-not-permitted'],
  ])('%s → %s', (url, code) => {
    expect(checkRepository('team-a', team, url)?.code ?? null).toBe(code);
  });

  it('names the repository and the project', () => {
    expect(checkRepository('team-a', team, 'https://x/y')?.message).toBe(
      "repository 'https://x/y' is not permitted by project 'team-a' (sourceRepos: https://git.example.com/team-a/*, !https://git.example.com/team-a/secret)",
    );
  });
});

describe('checkDestination', () => {
  it.each([
    [dev1, 'team-a', null],
    [dev1, 'team-a-tools', null],
    [dev1, 'kube-system', 'destination-not-permitted'],
    [prod1, 'team-a', null],
    [prod1, 'team-a-tools', 'destination-not-permitted'],
    [stage, 'team-a', 'destination-not-permitted'],
  ])('%j / %s → %s', (cluster, namespace, code) => {
    expect(checkDestination('team-a', team, cluster, namespace)?.code ?? null).toBe(code);
  });

  it('the unrestricted project allows every destination', () => {
    expect(checkDestination('default', UNRESTRICTED_PROJECT, stage, 'kube-system')).toBeNull();
  });
});

describe('restrictionsFor', () => {
  it('keeps only the namespaces of destinations that pick the cluster', () => {
    expect(restrictionsFor('team-a', team, dev1).namespaces).toEqual(['team-a*']);
    expect(restrictionsFor('team-a', team, prod1).namespaces).toEqual(['team-a']);
    expect(restrictionsFor('team-a', team, stage).namespaces).toEqual([]);
  });
});

describe('checkObject', () => {
  const onDev: ProjectRestrictions = restrictionsFor('team-a', team, dev1);
  const onlyDeployments: ProjectRestrictions = {
    ...onDev,
    namespaceResourceWhitelist: [{ group: 'apps', kind: '*' }],
  };
  const ns = (o: Partial<ProjectObjectRef>): ProjectObjectRef => ({
    group: 'apps',
    kind: 'Deployment',
    name: 'web',
    namespaced: true,
    namespace: 'team-a',
    ...o,
  });
  it.each<[string, ProjectRestrictions, ProjectObjectRef, string | null]>([
    ['a Deployment in an allowed namespace', onDev, ns({}), null],
    ['a Deployment in a namespace glob', onDev, ns({ namespace: 'team-a-tools' }), null],
    [
      'a Deployment elsewhere',
      onDev,
      ns({ namespace: 'kube-system' }),
      "apps/Deployment 'web': namespace 'kube-system' is not among the destinations of project 'team-a' on this cluster",
    ],
    [
      'a blacklisted namespaced kind',
      onDev,
      ns({ group: '', kind: 'ResourceQuota', name: 'q' }),
      "ResourceQuota 'q': kind ResourceQuota is not permitted by project 'team-a' (namespaceResourceWhitelist/Blacklist)",
    ],
    ['a whitelisted namespaced kind', onlyDeployments, ns({}), null],
    [
      'a namespaced kind missing from the whitelist',
      onlyDeployments,
      ns({ group: '', kind: 'ConfigMap', name: 'c' }),
      "ConfigMap 'c': kind ConfigMap is not permitted by project 'team-a' (namespaceResourceWhitelist/Blacklist)",
    ],
    [
      'a whitelisted cluster-scoped kind',
      onDev,
      { group: '', kind: 'Namespace', name: 'team-a', namespaced: false },
      null,
    ],
    [
      'a cluster-scoped kind outside the whitelist',
      onDev,
      { group: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin', namespaced: false },
      "rbac.authorization.k8s.io/ClusterRole 'admin': cluster-scoped kind ClusterRole is not permitted by project 'team-a' (clusterResourceWhitelist)",
    ],
    [
      'a blacklisted cluster-scoped kind despite a * whitelist',
      {
        ...onDev,
        clusterResourceWhitelist: [{ group: '*', kind: '*' }],
        clusterResourceBlacklist: [{ group: 'apiextensions.k8s.io', kind: '*' }],
      },
      { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', name: 'x', namespaced: false },
      "apiextensions.k8s.io/CustomResourceDefinition 'x': cluster-scoped kind CustomResourceDefinition is not permitted by project 'team-a' (clusterResourceWhitelist)",
    ],
    [
      'anything under the unrestricted project',
      restrictionsFor('default', UNRESTRICTED_PROJECT, stage),
      { group: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin', namespaced: false },
      null,
    ],
  ])('%s', (_what, restrictions, obj, message) => {
    expect(checkObject(restrictions, obj)?.message ?? null).toBe(message);
  });
});

describe('scopeFromManifests', () => {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    spec: { group: 'example.com', names: { kind: 'Widget' }, scope: 'Cluster' },
  };
  it.each([
    ['', 'Namespace', 'Cluster'],
    ['rbac.authorization.k8s.io', 'ClusterRole', 'Cluster'],
    ['rbac.authorization.k8s.io', 'Role', 'Namespaced'],
    ['apps', 'Deployment', 'Namespaced'],
    ['', 'ConfigMap', 'Namespaced'],
    ['example.com', 'Widget', 'Cluster'],
    ['example.com', 'Gadget', undefined],
  ])('%s/%s → %s', (group, kind, scope) => {
    expect(scopeFromManifests(group, kind, [crd])).toBe(scope);
  });
});

describe('projectNameOf', () => {
  const doc = (spec: Record<string, unknown>) => ({ kind: 'ApplicationSet', spec });
  it.each<[string, unknown, unknown]>([
    ['no project: default', doc({}), { name: 'default', path: 'spec.project' }],
    ['spec.project', doc({ project: 'team-a' }), { name: 'team-a', path: 'spec.project' }],
    [
      "the template's project (Argo CD)",
      doc({ template: { spec: { project: 'team-a' } } }),
      { name: 'team-a', path: 'spec.template.spec.project' },
    ],
    [
      'a templated project',
      doc({ template: { spec: { project: '{{team}}' } } }),
      {
        error: "the project must be written literally, not templated ('{{team}}')",
        path: 'spec.template.spec.project',
      },
    ],
    [
      'two different projects',
      doc({ project: 'a', template: { spec: { project: 'b' } } }),
      {
        error: "spec.template.spec.project 'b' differs from spec.project 'a': give one, or the same",
        path: 'spec.template.spec.project',
      },
    ],
  ])('%s', (_what, document, expected) => {
    expect(projectNameOf(document)).toEqual(expected);
  });
});

describe('literalRepoFields', () => {
  it('finds every literal repoURL with its field path, skipping templated ones', () => {
    const doc = {
      spec: {
        generators: [
          { git: { repoURL: 'https://git/a', revision: 'main' } },
          { matrix: { generators: [{ git: { repoURL: 'https://git/b' } }, { list: { elements: [] } }] } },
        ],
        template: { spec: { source: { repoURL: '{{repo}}' }, sources: [{ repoURL: 'https://git/c' }] } },
      },
    };
    expect(literalRepoFields(doc)).toEqual([
      { repoURL: 'https://git/a', path: 'spec.generators[0].git.repoURL' },
      { repoURL: 'https://git/b', path: 'spec.generators[1].matrix.generators[0].git.repoURL' },
      { repoURL: 'https://git/c', path: 'spec.template.spec.sources[0].repoURL' },
    ]);
  });
});
