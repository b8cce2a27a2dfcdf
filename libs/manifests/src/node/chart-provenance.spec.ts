import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledHelmPath } from './helm-binary.js';
import { verifyChartProvenance, type ChartProvenanceInput } from './chart-provenance.js';

// Helm provenance with the real `helm` and `gpg`: keys made in the test, a chart packaged and
// signed with `helm package --sign`, then verified against armored keyrings as a repository's
// setting holds them.

describe('verifyChartProvenance', () => {
  let dir: string;
  let signerKeys = '';
  let otherKeys = '';
  let pkg: Uint8Array;
  let prov = '';
  const helm = { binary: bundledHelmPath() ?? 'helm', timeoutMs: 30_000, maxOutputBytes: 1 << 20 };

  /** A fresh GNUPGHOME holding one signing key (no passphrase) named `who`; its armored public key. */
  const makeKey = (home: string, who: string): string => {
    mkdirSync(home, { mode: 0o700 });
    const gpg = (...args: string[]) =>
      execFileSync('gpg', ['--batch', '--quiet', ...args], { env: { ...process.env, GNUPGHOME: home } });
    gpg('--passphrase', '', '--quick-gen-key', who, 'ed25519', 'sign', 'never');
    writeFileSync(join(home, 'secring.gpg'), gpg('--export-secret-keys'));
    return gpg('--armor', '--export').toString('utf8');
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-prov-spec-'));
    signerKeys = makeKey(join(dir, 'signer'), 'Chart Signer <charts@example.com>');
    otherKeys = makeKey(join(dir, 'other'), 'Someone Else <else@example.com>');
    const chart = join(dir, 'web');
    mkdirSync(join(chart, 'templates'), { recursive: true });
    writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: web\nversion: 1.2.0\n');
    writeFileSync(
      join(chart, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n',
    );
    execFileSync(
      helm.binary,
      ['package', '--sign', '--key', 'Chart Signer', '--keyring', join(dir, 'signer', 'secring.gpg'), chart],
      { cwd: dir, env: { ...process.env, HOME: dir } },
    );
    pkg = readFileSync(join(dir, 'web-1.2.0.tgz'));
    prov = readFileSync(join(dir, 'web-1.2.0.tgz.prov'), 'utf8');
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const input = (over: Partial<ChartProvenanceInput>): ChartProvenanceInput => ({
    mode: 'when-present',
    packageName: 'web-1.2.0.tgz',
    packageBytes: pkg,
    provenance: prov,
    keyring: signerKeys,
    helm,
    ...over,
  });

  it.each([
    ['signed by an allowed key', () => ({}), { verified: true, signer: 'Chart Signer <charts@example.com>' }],
    [
      'signed by a key not in the keyring',
      () => ({ keyring: otherKeys }),
      { verified: false, reason: 'web-1.2.0.tgz: openpgp: signature made by unknown entity' },
    ],
    [
      'a package the provenance does not sign',
      () => ({ packageBytes: new Uint8Array([...pkg, 0]) }),
      {
        verified: false,
        reason: expect.stringMatching(/^web-1\.2\.0\.tgz: sha256 sum does not match/) as unknown,
      },
    ],
    [
      'no provenance, verify: when-present',
      () => ({ provenance: null }),
      { verified: null, reason: 'web-1.2.0.tgz has no provenance file' },
    ],
    [
      'no provenance, verify: required',
      () => ({ provenance: null, mode: 'required' as const }),
      { verified: false, reason: 'web-1.2.0.tgz has no provenance file (verify: required)' },
    ],
    [
      'verify: none',
      () => ({ mode: 'none' as const, keyring: otherKeys }),
      { verified: null, reason: 'provenance is not checked (verify: none)' },
    ],
  ])('%s', async (_name, over, expected) => {
    // The inputs are read when the case runs: the keys and the package are made in beforeAll.
    expect(await verifyChartProvenance(input(over()))).toEqual(expected);
  });

  it('refuses a keyring without a public key block, before running anything', async () => {
    await expect(
      verifyChartProvenance(input({ keyring: 'alice@example.com ssh-ed25519 AAAA' })),
    ).rejects.toThrow('no "-----BEGIN PGP PUBLIC KEY BLOCK-----" in the keyring');
  });

  it('leaves no temp dir behind', async () => {
    const before = new Set(execFileSync('ls', [tmpdir()]).toString().split('\n'));
    await verifyChartProvenance(input({ keyring: otherKeys }));
    const left = execFileSync('ls', [tmpdir()])
      .toString()
      .split('\n')
      .filter((n) => n.startsWith('flotilla-prov-') && !n.startsWith('flotilla-prov-spec') && !before.has(n));
    expect(left).toEqual([]);
  });
});
