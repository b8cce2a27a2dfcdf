import { describe, expect, it } from 'vitest';
import { literalRepoRefs, literalRepoUrlPaths } from './literal-repositories.js';

const document = {
  spec: {
    generators: [
      { git: { repoURL: 'https://git.example.com/config.git', revision: 'release' } },
      { git: { repoURL: 'https://git.example.com/{{team}}.git', revision: 'main' } },
    ],
    template: {
      spec: {
        sources: [
          { repoURL: 'https://git.example.com/apps.git', targetRevision: 'v1.2.0', path: 'web' },
          { repoURL: 'https://git.example.com/apps.git', targetRevision: '{{rev}}', path: 'api' },
          { repoURL: 'https://charts.example.com', chart: 'redis', targetRevision: '19.x' },
          { repoURL: 'https://git.example.com/config.git', path: 'values' },
        ],
      },
    },
  },
};

describe('literalRepoRefs', () => {
  it('lists each literal Git URL with the refs it is read at; templated refs read HEAD; charts and templated URLs are left out', () => {
    expect(literalRepoRefs(document)).toEqual(
      new Map([
        ['https://git.example.com/config.git', new Set(['release', 'HEAD'])],
        ['https://git.example.com/apps.git', new Set(['v1.2.0', 'HEAD'])],
      ]),
    );
  });
});

describe('literalRepoUrlPaths', () => {
  it('names the field where each literal Git URL is first written', () => {
    expect(literalRepoUrlPaths(document)).toEqual(
      new Map([
        ['https://git.example.com/config.git', 'spec.generators[0].git.repoURL'],
        ['https://git.example.com/apps.git', 'spec.template.spec.sources[0].repoURL'],
      ]),
    );
  });
});
