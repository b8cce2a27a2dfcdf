import { describe, expect, it } from 'vitest';
import { formatFleetError } from './fleet-error.js';
import { validateFleetDirectory } from './validate-fleet-directory.js';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO5+McEBl4o1Z8rBvZZhbncMeUIGIjJZVTlRWJb4j9Vi';

const doc = (name: string, spec: string) =>
  `apiVersion: flotilla.dev/v1alpha1\nkind: SourceVerification\nmetadata:\n  name: ${name}\nspec:\n${spec}`;

describe('SourceVerification in a fleet repository', () => {
  it('a valid declaration is an object of the set, defaults filled in', () => {
    const r = validateFleetDirectory([
      {
        path: 'sources/app.yaml',
        content: doc(
          'app',
          `  repoURL: https://git.example.com/app.git\n  mode: strict\n  allowedSigners: |\n    alice@example.com ${KEY}\n`,
        ),
      },
    ]);
    expect(r.errors).toEqual([]);
    expect(r.objects).toHaveLength(1);
    expect(r.objects[0]).toMatchObject({
      kind: 'SourceVerification',
      object: { spec: { repoURL: 'https://git.example.com/app.git', mode: 'strict', gpgKeys: '' } },
    });
  });

  it.each([
    {
      name: 'an unknown mode',
      spec: '  repoURL: https://git.example.com/app.git\n  mode: always\n',
      error: /sources\/bad\.yaml:\d+: SourceVerification\/bad: spec\.mode: /,
    },
    {
      name: 'a malformed allowed-signers line, named by its line',
      spec: `  repoURL: https://git.example.com/app.git\n  mode: head\n  allowedSigners: |\n    alice@example.com ${KEY}\n    bob@example.com ssh-ed25519 not*base64\n`,
      error: /spec\.allowedSigners: line 2: the key is not a base64 ssh-ed25519 public key/,
    },
    {
      name: 'head without any key',
      spec: '  repoURL: https://git.example.com/app.git\n  mode: head\n',
      error: /spec\.allowedSigners: mode head needs at least one allowed key/,
    },
    {
      name: 'an unknown field',
      spec: '  repoURL: https://git.example.com/app.git\n  mode: none\n  keys: []\n',
      error: /spec/,
    },
  ])('refuses $name, naming the file and field', ({ spec, error }) => {
    const r = validateFleetDirectory([{ path: 'sources/bad.yaml', content: doc('bad', spec) }]);
    expect(r.objects).toEqual([]);
    expect(r.errors.map(formatFleetError).join('\n')).toMatch(error);
  });

  it('refuses a second declaration of one repository, pointing at the first', () => {
    const spec = '  repoURL: https://git.example.com/app.git\n  mode: none\n';
    const r = validateFleetDirectory([
      { path: 'a.yaml', content: doc('first', spec) },
      { path: 'b.yaml', content: doc('second', spec.replace('app.git', 'app.git/')) },
    ]);
    expect(r.errors.map(formatFleetError)).toEqual([
      expect.stringMatching(
        /^b\.yaml:\d+: SourceVerification\/second: spec\.repoURL: .*already declared by SourceVerification 'first' \(a\.yaml\)/,
      ),
    ]);
  });
});
