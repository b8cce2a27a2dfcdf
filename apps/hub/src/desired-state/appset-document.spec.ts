import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HubError } from '../common/hub-error.js';
import { readAppSetDocument } from './appset-document.js';

const appSet = (spec: Record<string, unknown>) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'ApplicationSet',
  metadata: { name: 'ingress' },
  spec: {
    generators: [{ list: { elements: [{ cluster: 'eu1' }] } }],
    template: {
      metadata: { name: '{{cluster}}-ingress' },
      spec: { destination: { name: '{{cluster}}', namespace: 'ingress' }, ...spec },
    },
  },
});

function refusal(body: unknown): { status: number; code: string; path: string | undefined; message: string } {
  try {
    readAppSetDocument(body);
  } catch (e) {
    if (e instanceof HubError) return { status: e.status, code: e.code, path: e.path, message: e.message };
    throw e;
  }
  throw new Error('accepted');
}

/** Argo CD fields the hub does not render are refused by name, never rendered as plain YAML. */
describe('readAppSetDocument refuses sources the hub does not render', () => {
  it.each([
    [
      { source: { repoURL: 'https://git.example.com/x.git', path: 'p', plugin: { name: 'cmp' } } },
      'spec.template.spec.source.plugin',
    ],
    [
      { sources: [{ repoURL: 'https://git.example.com/x.git', path: 'a', plugin: { name: 'cmp' } }] },
      'spec.template.spec.sources[0].plugin',
    ],
    [
      { sources: [{ repoURL: 'https://git.example.com/x.git', path: 'a', kustomize: {} }] },
      'spec.template.spec.sources[0].kustomize',
    ],
    [
      { sources: [{ repoURL: 'https://git.example.com/x.git', path: 'a', directory: { recurse: true } }] },
      'spec.template.spec.sources[0].directory',
    ],
  ])('%j → 400 at %s', (spec, path) => {
    const r = refusal(appSet(spec));
    expect([r.status, r.code, r.path]).toEqual([400, 'unsupported-source', path]);
    expect(r.message).toMatch(/not yet by the hub|not supported|not rendered by the hub/);
  });

  it('accepts a chart from an OCI registry, and refuses a malformed registry reference naming repoURL', () => {
    const oci = {
      repoURL: 'oci://registry.example.com/charts',
      chart: 'ingress-nginx',
      targetRevision: '4.*',
    };
    expect(() => readAppSetDocument(appSet({ source: oci }))).not.toThrow();
    expect(() => readAppSetDocument(appSet({ sources: [oci] }))).not.toThrow();
    const withCredentials = refusal(
      appSet({ source: { ...oci, repoURL: 'oci://user:secret@registry.example.com/charts' } }),
    );
    expect([withCredentials.status, withCredentials.code, withCredentials.path]).toEqual([
      400,
      'invalid-appset',
      'spec.template.spec.source.repoURL',
    ]);
    expect(withCredentials.message).toMatch(
      /^"oci:\/\/user:secret@registry\.example\.com\/charts" must be oci:\/\/host\[:port\]\/path, without credentials/,
    );
    const badName = refusal(appSet({ sources: [{ ...oci, chart: 'Ingress_NGINX' }] }));
    expect([badName.code, badName.path]).toEqual(['invalid-appset', 'spec.template.spec.sources[0].repoURL']);
    expect(badName.message).toContain('is not a valid repository name in an OCI registry');
  });

  it('refuses a source.helm field Flotilla does not render, or a wrong type, by name', () => {
    const helm = (h: unknown) =>
      refusal(appSet({ source: { repoURL: 'https://git.example.com/x.git', path: 'chart', helm: h } }));
    expect(helm({ valueFile: ['v.yaml'] })).toMatchObject({
      status: 400,
      code: 'invalid-helm-options',
      path: 'spec.template.spec.source.helm.valueFile',
    });
    expect(helm({ releaseName: '{{cluster}}', postRenderer: 'x' }).path).toBe(
      'spec.template.spec.source.helm.postRenderer',
    );
    expect(helm({ skipCrds: 'yes' })).toMatchObject({
      path: 'spec.template.spec.source.helm.skipCrds',
      message: 'must be true or false',
    });
  });

  it('accepts a chart in Git with helm options, templated or not', () => {
    for (const helm of [
      { valueFiles: ['v.yaml'], parameters: [{ name: 'a', value: '1' }] },
      { releaseName: '{{cluster}}' },
    ])
      expect(
        readAppSetDocument(
          appSet({ source: { repoURL: 'https://git.example.com/x.git', path: 'chart', helm } }),
        ).name,
      ).toBe('ingress');
  });

  it('accepts a chart from a Helm repository, and refuses one with a path or a Git URL', () => {
    const chart = (source: Record<string, unknown>) =>
      appSet({ source: { chart: 'ingress-nginx', targetRevision: '4.*', ...source } });
    expect(readAppSetDocument(chart({ repoURL: 'https://charts.example.com' })).name).toBe('ingress');
    expect(refusal(chart({ repoURL: 'https://charts.example.com', path: 'x' })).path).toBe(
      'spec.template.spec.source.path',
    );
    expect(refusal(chart({ repoURL: 'git@github.com:x/y.git' }))).toMatchObject({
      code: 'invalid-appset',
      path: 'spec.template.spec.source.repoURL',
    });
  });

  it('accepts multi-source templates (a chart with values from a ref, templated or not) and checks them whole', () => {
    const sources = (valueFile: string) => [
      { repoURL: 'https://charts.example.com', chart: 'web', helm: { valueFiles: [valueFile] } },
      { repoURL: 'https://git.example.com/values.git', targetRevision: 'main', ref: 'values' },
    ];
    expect(readAppSetDocument(appSet({ sources: sources('$values/web.yaml') })).name).toBe('ingress');
    expect(readAppSetDocument(appSet({ sources: sources('$values/{{cluster}}.yaml') })).name).toBe('ingress');
    expect(refusal(appSet({ sources: sources('$other/web.yaml') }))).toMatchObject({
      code: 'invalid-appset',
      path: 'spec.template.spec.sources[0].helm.valueFiles[0]',
    });
    expect(refusal(appSet({ sources: [] })).path).toBe('spec.template.spec.sources');
    expect(
      refusal(appSet({ sources: sources('$values/web.yaml'), source: { repoURL: 'https://x', path: 'a' } }))
        .path,
    ).toBe('spec.template.spec.sources');
    expect(
      refusal(
        appSet({
          sources: [{ repoURL: 'https://charts.example.com', chart: 'web', helm: { postRenderer: 'x' } }],
        }),
      ),
    ).toMatchObject({
      code: 'invalid-helm-options',
      path: 'spec.template.spec.sources[0].helm.postRenderer',
    });
  });

  it('accepts examples/helm-multi-source/applicationset.yaml as it is', () => {
    const example = new URL('../../../../examples/helm-multi-source/applicationset.yaml', import.meta.url);
    expect(readAppSetDocument(parse(readFileSync(example, 'utf8'))).name).toBe('hello');
  });

  it('accepts plain YAML and Kustomize sources', () => {
    expect(
      readAppSetDocument(
        appSet({ source: { repoURL: 'https://git.example.com/x.git', path: 'app', kustomize: {} } }),
      ).name,
    ).toBe('ingress');
  });
});
