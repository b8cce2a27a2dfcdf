import { describe, expect, it } from 'vitest';
import { DiffError } from './diff-error.js';
import { keepLiveIgnoredFields } from './keep-live.js';

const desired = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop' },
  spec: {
    replicas: 2,
    template: { spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
  },
};
const live = {
  ...structuredClone(desired),
  spec: {
    replicas: 7,
    paused: true,
    template: {
      spec: {
        containers: [
          { name: 'web', image: 'nginx:1.28' },
          { name: 'mesh', image: 'proxy:1' },
        ],
      },
    },
  },
};

describe('keepLiveIgnoredFields', () => {
  it('takes the live value of fields a jsonPointer rule matches, and leaves the input alone', () => {
    const out = keepLiveIgnoredFields(desired, live, [
      { group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas', '/spec/paused'] },
    ]);
    expect(out.spec.replicas).toBe(7);
    expect((out.spec as Record<string, unknown>)['paused']).toBe(true);
    expect(out.spec.template).toEqual(desired.spec.template);
    expect(desired.spec.replicas).toBe(2);
  });

  it('takes the live value of what a jq expression selects, inside arrays too', () => {
    const out = keepLiveIgnoredFields(desired, live, [
      {
        group: 'apps',
        kind: 'Deployment',
        jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "web") | .image'],
      },
    ]);
    expect(out.spec.template.spec.containers).toEqual([{ name: 'web', image: 'nginx:1.28' }]);
    expect(out.spec.replicas).toBe(2);
  });

  it('keeps the desired value when the field is not live, and ignores rules for other objects', () => {
    const noReplicas = { ...live, spec: { ...live.spec, replicas: undefined } };
    delete (noReplicas.spec as Record<string, unknown>)['replicas'];
    const out = keepLiveIgnoredFields(desired, noReplicas, [
      { group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas'] },
      { group: 'apps', kind: 'Deployment', name: 'other', jsonPointers: ['/spec/paused'] },
    ]);
    expect(out).toEqual(desired);
  });

  it('refuses a rule that can never work, naming its field', () => {
    expect(() =>
      keepLiveIgnoredFields(desired, live, [{ kind: 'Deployment', jsonPointers: ['spec/replicas'] }]),
    ).toThrow(DiffError);
  });

  describe('matches list entries by their merge key, as the server merges them', () => {
    const deployment = (containers: unknown[]) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { template: { spec: { containers } } },
    });
    const keepAppImage = [
      {
        group: 'apps',
        kind: 'Deployment',
        jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "app") | .image'],
      },
    ];

    it('keeps the live image on the container of that name, not the one at the same index', () => {
      const wanted = deployment([
        { name: 'log-shipper', image: 'shipper:2' },
        { name: 'app', image: 'app:1' },
      ]);
      const out = keepLiveIgnoredFields(wanted, deployment([{ name: 'app', image: 'app:9' }]), keepAppImage);
      expect(out.spec.template.spec.containers).toEqual([
        { name: 'log-shipper', image: 'shipper:2' },
        { name: 'app', image: 'app:9' },
      ]);
    });

    it('changes nothing when the selected entry is only live', () => {
      const wanted = deployment([{ name: 'log-shipper', image: 'shipper:2' }]);
      const out = keepLiveIgnoredFields(wanted, deployment([{ name: 'app', image: 'app:9' }]), keepAppImage);
      expect(out).toEqual(wanted);
      const byPointer = keepLiveIgnoredFields(wanted, deployment([{ name: 'app', image: 'app:9' }]), [
        { group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/template/spec/containers/0/image'] },
      ]);
      expect(byPointer).toEqual(wanted);
    });

    it('matches ports by port and protocol, and env by name', () => {
      const wanted = deployment([
        {
          name: 'app',
          image: 'app:1',
          ports: [
            { containerPort: 53, protocol: 'UDP', name: 'dns-udp' },
            { containerPort: 53, name: 'dns-tcp' },
          ],
          env: [
            { name: 'A', value: 'desired-a' },
            { name: 'B', value: 'desired-b' },
          ],
        },
      ]);
      const current = deployment([
        {
          name: 'app',
          image: 'app:1',
          ports: [{ containerPort: 53, protocol: 'TCP', name: 'live-tcp' }],
          env: [{ name: 'B', value: 'live-b' }],
        },
      ]);
      const out = keepLiveIgnoredFields(wanted, current, [
        {
          group: 'apps',
          kind: 'Deployment',
          jsonPointers: [
            '/spec/template/spec/containers/0/ports/0/name',
            '/spec/template/spec/containers/0/env/0/value',
          ],
        },
      ]);
      const [app] = out.spec.template.spec.containers as [{ ports: unknown[]; env: unknown[] }];
      expect(app.ports).toEqual([
        { containerPort: 53, protocol: 'UDP', name: 'dns-udp' },
        { containerPort: 53, name: 'live-tcp' },
      ]);
      expect(app.env).toEqual([
        { name: 'A', value: 'desired-a' },
        { name: 'B', value: 'live-b' },
      ]);
    });
  });
});
