import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HubError } from '../common/hub-error.js';
import { literalRepoRefs, readAppSetDocument } from './appset-document.js';

const doc = (name: string) =>
  parse(
    readFileSync(new URL(`../testdata/${name}`, import.meta.url), 'utf8')
      .replaceAll('NAME', 'single')
      .replaceAll('REPO_URL', 'https://git.example/apps.git'),
  ) as unknown;

function refusal(body: unknown): HubError {
  try {
    readAppSetDocument(body);
  } catch (e) {
    if (e instanceof HubError) return e;
    throw e;
  }
  throw new Error('accepted');
}

describe('readAppSetDocument', () => {
  it('accepts Flotilla and Argo CD documents and keeps them verbatim', () => {
    const web = readAppSetDocument(doc('appset-web.yaml'));
    expect(web.name).toBe('web');
    expect(web.apiVersion).toBe('flotilla.dev/v1alpha1');
    expect(web.document).toEqual(doc('appset-web.yaml'));
    expect(readAppSetDocument(doc('appset-single-path.yaml')).apiVersion).toBe('argoproj.io/v1alpha1');
  });

  it('refuses an unknown generator, naming the generator entry', () => {
    const e = refusal(doc('appset-argo-unknown-generator.yaml'));
    expect([e.status, e.code, e.path]).toEqual([400, 'unknown-generator', 'spec.generators[0]']);
  });

  it('refuses a document without kind or a usable name', () => {
    expect(refusal({ apiVersion: 'flotilla.dev/v1alpha1', spec: {} }).path).toBe('kind');
    const noName = doc('appset-web.yaml') as { metadata: { name?: string } };
    noName.metadata.name = 'Not Valid';
    expect(refusal(noName).path).toBe('metadata.name');
    expect(refusal([1, 2]).code).toBe('invalid-appset');
  });
});

describe('literalRepoRefs', () => {
  it('collects literal repository URLs with their revisions and skips templated ones', () => {
    const refs = literalRepoRefs({
      spec: {
        generators: [{ git: { repoURL: 'https://git.example/fleet.git', revision: 'v2' } }],
        template: { spec: { source: { repoURL: 'https://git.example/apps.git' } } },
        other: { repoURL: '{{url}}' },
      },
    });
    expect([...refs.entries()].map(([u, r]) => [u, [...r]])).toEqual([
      ['https://git.example/fleet.git', ['v2']],
      ['https://git.example/apps.git', ['HEAD']],
    ]);
  });
});
