import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type FleetErrorCode } from './fleet-error.js';
import { readTree } from './testing/read-tree.js';
import { validateFleetDirectory, type FleetValidation } from './validate-fleet-directory.js';

const CASES = new URL('./testdata/cases/', import.meta.url).pathname;
const EXAMPLE = new URL('../../../examples/fleet-repo/', import.meta.url).pathname;

/** The class of error each fixture exists to show; the fixture's expected.json holds every field. */
const CASE_CODES: Record<string, FleetErrorCode[]> = {
  'bad-yaml': ['invalid-yaml'],
  'unknown-kind': ['unknown-kind', 'unknown-api-version', 'not-an-object'],
  'missing-required-field': ['invalid-field'],
  'bad-cron': ['invalid-schedule'],
  'bad-time-zone': ['invalid-time-zone'],
  'bad-duration': ['invalid-duration'],
  'bad-selector-operator': ['invalid-selector'],
  'bad-labels': ['invalid-field', 'invalid-selector'],
  'bad-policy': ['invalid-expression', 'invalid-field', 'dangling-reference'],
  'bad-policy-scope': ['invalid-selector', 'invalid-field'],
  'dangling-reference': ['dangling-reference'],
  'duplicate-names': ['duplicate-name'],
  'repo-outside-project': ['repo-not-permitted', 'destination-not-permitted'],
  'conflicting-cluster-labels': ['label-conflict'],
  'valid-fleet': [],
};

interface Expected {
  valid: boolean;
  objects: { kind: string; name: string; file: string; document: number; line: number }[];
  errors: FleetValidation['errors'];
}

function summary(r: FleetValidation): Expected {
  return {
    valid: r.errors.length === 0,
    objects: r.objects.map((o) => ({
      kind: o.kind,
      name: o.name,
      file: o.file,
      document: o.document,
      line: o.line,
    })),
    errors: r.errors,
  };
}

describe('validateFleetDirectory: one fixture directory per class of error', () => {
  it('has a fixture for every case in the table, and no other', () => {
    expect(readdirSync(CASES).sort()).toEqual(Object.keys(CASE_CODES).sort());
  });

  it.each(Object.entries(CASE_CODES))('%s', (name, codes) => {
    const dir = `${CASES}${name}`;
    const expected = JSON.parse(readFileSync(`${dir}/expected.json`, 'utf8')) as Expected;
    const result = summary(validateFleetDirectory(readTree(dir, (p) => p === 'expected.json')));
    expect(result).toEqual(expected);
    expect([...new Set(result.errors.map((e) => e.code))].sort()).toEqual([...codes].sort());
    expect(result.valid).toBe(codes.length === 0);
  });
});

describe('validateFleetDirectory', () => {
  it('accepts the example fleet repository in examples/fleet-repo', () => {
    const r = validateFleetDirectory(readTree(EXAMPLE));
    expect(r.errors).toEqual([]);
    expect(r.objects.map((o) => `${o.kind}/${o.name}`).sort()).toEqual([
      'ApplicationSet/payments-api',
      'ApplicationSet/platform-addons',
      'ClusterGroup/canaries',
      'ClusterGroup/europe',
      'ClusterGroup/monitoring',
      'Project/payments',
      'Project/platform',
      'RolloutStrategy/canary-first',
      'SyncWindow/business-hours',
      'SyncWindow/friday-freeze',
    ]);
  });

  it("keeps Kubernetes' admission policies apart, with the ConfigMaps their paramKind names", () => {
    const r = validateFleetDirectory(readTree(EXAMPLE));
    expect(r.policies.map((p) => `${p.kind}/${p.name} ${p.file}:${p.line}`)).toEqual([
      'ValidatingAdmissionPolicy/replica-limit policies/replica-limit.yaml:3',
      'ValidatingAdmissionPolicyBinding/replica-limit policies/replica-limit.yaml:22',
      'ValidatingAdmissionPolicy/trusted-registries policies/trusted-registries.yaml:1',
      'ValidatingAdmissionPolicyBinding/trusted-registries-warn policies/trusted-registries.yaml:20',
    ]);
    expect(r.params.map((p) => `${String(p.object.kind)}/${p.name} ${p.file}:${p.line}`)).toEqual([
      'ConfigMap/replica-limit policies/replica-limit.yaml:34',
    ]);
  });

  it('refuses a ConfigMap that no policy takes as params, as any other foreign kind', () => {
    const r = validateFleetDirectory([
      {
        path: 'cm.yaml',
        content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loose}\ndata: {a: b}\n',
      },
    ]);
    expect(r.params).toEqual([]);
    expect(r.errors.map((e) => [e.code, e.file, e.path])).toEqual([
      ['unknown-api-version', 'cm.yaml', 'apiVersion'],
    ]);
  });

  it('refuses a policy defined twice as any object defined twice, naming the first', () => {
    const policy =
      'apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\n' +
      'spec:\n  matchConstraints: {resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}\n' +
      '  validations:\n    - expression: "true"\n';
    const r = validateFleetDirectory([
      { path: 'a.yaml', content: policy },
      { path: 'b.yaml', content: policy },
    ]);
    expect(r.policies.map((p) => `${p.kind}/${p.name} ${p.file}`)).toEqual([
      'ValidatingAdmissionPolicy/p a.yaml',
    ]);
    expect(r.errors.map((e) => [e.code, e.file, e.line, e.path, e.message])).toEqual([
      [
        'duplicate-name',
        'b.yaml',
        3,
        'metadata.name',
        'ValidatingAdmissionPolicy/p is already defined at a.yaml:3; names are unique per kind',
      ],
    ]);
  });

  it('returns parsed objects with defaults filled in', () => {
    const r = validateFleetDirectory(readTree(`${CASES}valid-fleet`, (p) => p === 'expected.json'));
    const window = r.objects.find((o) => o.kind === 'SyncWindow');
    expect(window?.kind === 'SyncWindow' && window.object.spec).toEqual({
      kind: 'allow',
      schedule: '0 22 * * *',
      duration: '8h',
      timeZone: 'Europe/Paris',
      applications: [],
      namespaces: [],
      clusters: [],
      manualSync: false,
      andOperator: false,
      projects: ['team-a'],
    });
    const strategy = r.objects.find((o) => o.kind === 'RolloutStrategy');
    expect(strategy?.kind === 'RolloutStrategy' && strategy.object.spec.steps).toEqual([
      {
        selector: { matchLabels: { canary: 'true' } },
        maxUnavailable: 0,
        bakeTime: '10m',
        failureBudget: 0,
      },
      { selector: {}, maxUnavailable: '20%', bakeTime: '0s', failureBudget: 0 },
    ]);
    const appSet = r.objects.find((o) => o.kind === 'ApplicationSet');
    expect(appSet?.kind === 'ApplicationSet' && appSet.object.spec.project).toBe('team-a');
    expect(appSet?.kind === 'ApplicationSet' && appSet.object.spec.rolloutStrategy).toBe('canary-first');
  });

  it('gives the same answer whatever order the files arrive in', () => {
    const files = readTree(`${CASES}dangling-reference`).concat(readTree(`${CASES}duplicate-names`));
    const forward = validateFleetDirectory(files);
    const backward = validateFleetDirectory([...files].reverse());
    expect(backward).toEqual(forward);
  });

  it('reads only YAML files outside hidden directories', () => {
    const r = validateFleetDirectory([
      { path: '.github/workflows/ci.yaml', content: 'on: push\n' },
      { path: 'apps/.hidden/x.yml', content: 'kind: Nope\n' },
      { path: 'README.md', content: '# fleet\n' },
      { path: 'renovate.json', content: '{"extends": []}' },
      { path: 'empty.yaml', content: '# nothing yet\n---\n' },
    ]);
    expect(r).toEqual({ objects: [], policies: [], params: [], errors: [] });
  });

  it('refuses paths that could leave the repository, and changes nothing for them', () => {
    const window =
      'apiVersion: flotilla.dev/v1alpha1\nkind: SyncWindow\nmetadata: {name: w}\nspec: {kind: deny, schedule: "0 0 * * *", duration: 1h}\n';
    const r = validateFleetDirectory([
      { path: '../outside.yaml', content: window },
      { path: '/etc/fleet.yaml', content: window },
      { path: 'a/../../b.yaml', content: window },
    ]);
    expect(r.objects).toEqual([]);
    expect(r.errors.map((e) => [e.code, e.file])).toEqual([
      ['invalid-path', '../outside.yaml'],
      ['invalid-path', '/etc/fleet.yaml'],
      ['invalid-path', 'a/../../b.yaml'],
    ]);
  });

  it('checks a NotificationPolicy: its triggers, and its templates rendered against a sample message', () => {
    const policy = (triggers: string, title: string) =>
      [
        'apiVersion: flotilla.dev/v1alpha1',
        'kind: NotificationPolicy',
        'metadata:',
        '  name: team',
        'spec:',
        `  triggers: [${triggers}]`,
        '  destinations: [team-hook]',
        '  template:',
        `    title: '${title}'`,
        '',
      ].join('\n');
    const good = validateFleetDirectory([
      { path: 'notify.yaml', content: policy('deployed, window-held', '{{ .trigger }}: {{ .count }}') },
    ]);
    expect(good.errors).toEqual([]);
    expect(good.objects.map((o) => [o.kind, o.name])).toEqual([['NotificationPolicy', 'team']]);
    const bad = validateFleetDirectory([
      { path: 'notify.yaml', content: policy('deployed, sync-exploded', '{{ .nosuchfield }}') },
    ]);
    expect(bad.objects).toEqual([]);
    expect(bad.errors.map((e) => [e.file, e.path])).toEqual([
      ['notify.yaml', 'spec.triggers[1]'],
      ['notify.yaml', 'spec.template.title'],
    ]);
    expect(bad.errors[1]?.message).toContain('nosuchfield');
  });

  it('refuses two rollout steps with the same name', () => {
    const r = validateFleetDirectory([
      {
        path: 'rollout.yaml',
        content: [
          'apiVersion: flotilla.dev/v1alpha1',
          'kind: RolloutStrategy',
          'metadata: {name: twice}',
          'spec:',
          '  steps:',
          '    - {name: canary, selector: {}}',
          '    - name: canary',
          '      selector: {}',
          '',
        ].join('\n'),
      },
    ]);
    expect(r.errors.map((e) => [e.code, e.path, e.line, e.message])).toEqual([
      ['invalid-field', 'spec.steps[1].name', 7, "step name 'canary' is used twice"],
    ]);
  });

  it('refuses a YAML alias bomb instead of expanding it', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 8; i++) {
      const prev = String.fromCharCode(97 + i);
      const next = String.fromCharCode(98 + i);
      lines.push(`${next}: &${next} [${Array(10).fill(`*${prev}`).join(', ')}]`);
    }
    const r = validateFleetDirectory([{ path: 'bomb.yaml', content: `${lines.join('\n')}\n` }]);
    expect(r.objects).toEqual([]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ code: 'invalid-yaml', file: 'bomb.yaml', document: 0 });
    expect(r.errors[0]?.message).toContain('alias');
  });

  it('refuses deeply nested and oversized files', () => {
    const r = validateFleetDirectory([
      { path: 'deep.yaml', content: `a: ${'['.repeat(100)}${']'.repeat(100)}\n` },
      { path: 'deeper.yaml', content: `a: ${'['.repeat(20000)}${']'.repeat(20000)}\n` },
      { path: 'huge.yaml', content: `a: "${'x'.repeat(3 * 1024 * 1024)}"\n` },
    ]);
    expect(r.objects).toEqual([]);
    expect(r.errors.map((e) => [e.code, e.file, e.line])).toEqual([
      ['invalid-yaml', 'deep.yaml', 1],
      ['invalid-yaml', 'deeper.yaml', 1],
      ['invalid-yaml', 'huge.yaml', 1],
    ]);
    expect(r.errors[0]?.message).toBe('nested deeper than 64 levels');
    expect(r.errors[2]?.message).toBe('file is larger than 2 MiB');
  });

  it('checks the references of a valid object against invalid ones without reporting them twice', () => {
    // The project exists but is invalid: the ApplicationSet names it correctly, so only the project is wrong.
    const r = validateFleetDirectory([
      {
        path: 'fleet.yaml',
        content: [
          'apiVersion: flotilla.dev/v1alpha1',
          'kind: Project',
          'metadata: {name: team-a}',
          'spec: {destinations: []}',
          '---',
          'apiVersion: flotilla.dev/v1alpha1',
          'kind: ApplicationSet',
          'metadata: {name: web}',
          'spec:',
          '  project: team-a',
          '  generators: [{list: {elements: [{c: a}]}}]',
          '  template: {metadata: {name: "web-{{c}}"}, spec: {source: {repoURL: "https://x", path: "."}, destination: {name: a, namespace: b}}}',
          '',
        ].join('\n'),
      },
    ]);
    expect(r.errors.map((e) => [e.code, e.kind, e.name, e.path, e.line])).toEqual([
      ['invalid-field', 'Project', 'team-a', 'spec.sourceRepos', 4],
    ]);
    expect(r.objects.map((o) => o.name)).toEqual(['web']);
  });
});
