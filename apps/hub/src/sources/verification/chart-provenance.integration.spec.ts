import 'reflect-metadata';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChartRepositoryVerificationView } from '@flotilla/contract';
import { Database } from '../../db/database.js';
import {
  startTestHelmRepository,
  type ChartSigningKey,
  type TestHelmRepository,
} from '../../testing/test-helm-repository.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../../testing/two-cluster-fleet.js';

const CLI = fileURLToPath(new URL('../../../../cli/dist/main.js', import.meta.url));
const poll = { timeout: 60_000, interval: 200 };

interface TargetRow {
  name: string;
  desiredRevision: string;
  releasedRevision: string | null;
  reason: { code: string; message: string } | null;
}

interface ErrorAnswer {
  code?: string;
  path?: string;
  message: string;
  verify?: string;
  fingerprints?: string[];
}

/** The `web` chart at `version`: one ConfigMap saying which version rendered it. */
const webChart = (version: string) => ({
  name: 'web',
  version,
  files: {
    'templates/config.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-chart\ndata:\n  chart: {{ .Chart.Version | quote }}\n',
  },
});

/**
 * Helm provenance end to end on the real hub (PostgreSQL, Redis, the real helm and gpg): a GPG key
 * made in the test signs charts with `helm package --sign`, served by a real Helm repository; the
 * `charts` appset (targets charts-eu-1, charts-us-1) renders `web` at `^1.0.0` from it.
 */
describe('Helm provenance: a chart is released only when its repository setting allows it', () => {
  let fleet: TwoClusterFleet;
  let charts: TestHelmRepository;
  let keys: string;
  let signer: ChartSigningKey;
  let signerKeyring = '';
  let signerFingerprint = '';

  const targets = async () =>
    (await fleet.call<TargetRow[]>('GET', '/api/v1/targets')).body.filter((t) =>
      t.name.startsWith('charts-'),
    );
  const setVerification = (body: unknown) =>
    fleet.call<ErrorAnswer>('PUT', '/api/v1/chart-repositories/verification', body, 'alice-admin');
  const audited = async (action: string) =>
    (
      await fleet.call<{ items: { action: string; details: Record<string, unknown> }[] }>(
        'GET',
        `/api/v1/audit?action=${action}&limit=100`,
      )
    ).body.items;
  const expand = () => fleet.call('POST', '/api/v1/appsets/charts/refresh', {}, 'alice-admin');

  /** Both targets want, and the rollout released, chart version `version`. */
  const released = async (version: string) => {
    await expect
      .poll(async () => (await targets()).map((t) => t.desiredRevision), poll)
      .toEqual([version, version]);
    await expect
      .poll(async () => (await targets()).map((t) => t.releasedRevision), poll)
      .toEqual([version, version]);
  };

  /** Both targets say SourceUnverified about `version` (and `reason`), and keep `kept`. */
  const refused = async (version: string, reason: RegExp, kept: string) => {
    const about = `chart web ${version} of ${charts.url}`;
    // The reasons themselves are polled, so that a failure shows what the targets say instead.
    await expect
      .poll(
        async () => {
          // Asked again each time: a request made while an expansion runs may be folded into it.
          await expand();
          return (await targets()).map((t) => `${t.reason?.code}: ${t.reason?.message}`);
        },
        { ...poll, interval: 1000 },
      )
      .toEqual(
        [0, 1].map((): unknown =>
          expect.toSatisfy(
            (m: string) => m.startsWith('SourceUnverified: ') && m.includes(about) && reason.test(m),
          ),
        ),
      );
    for (const t of await targets()) {
      expect(t.desiredRevision).toBe(kept);
      expect(t.releasedRevision).toBe(kept);
    }
  };

  beforeAll(async () => {
    keys = mkdtempSync(join(tmpdir(), 'flotilla-chart-signing-'));
    // A release manager's GPG key (no passphrase), and the legacy secret keyring `helm package --sign` reads.
    const home = join(keys, 'gnupg');
    mkdirSync(home, { mode: 0o700 });
    const gpg = (...args: string[]) =>
      execFileSync('gpg', ['--batch', '--quiet', ...args], { env: { ...process.env, GNUPGHOME: home } });
    gpg(
      '--passphrase',
      '',
      '--quick-gen-key',
      'Chart Signer <charts@example.com>',
      'ed25519',
      'sign',
      'never',
    );
    signer = { key: 'Chart Signer', secretKeyring: join(keys, 'secring.gpg') };
    writeFileSync(signer.secretKeyring, gpg('--export-secret-keys'));
    signerKeyring = gpg('--armor', '--export').toString('utf8');
    signerFingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(gpg('--with-colons', '--list-keys').toString())![1]!;

    charts = await startTestHelmRepository();
    charts.publish(webChart('1.0.0'), signer);
    fleet = await startTwoClusterFleet({
      HELM_REPOSITORY_CACHE_SECONDS: '0',
      METRICS_REASONS_MAX_AGE_SECONDS: '0',
      // A loaded machine must not make the agents look offline: that reason would outrank SourceUnverified.
      CLUSTER_OFFLINE_SECONDS: '3600',
    });
    const doc = {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'charts' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }, { cluster: 'us-1' }] } }],
        template: {
          metadata: { name: 'charts-{{cluster}}' },
          spec: {
            source: { repoURL: charts.url, chart: 'web', targetRevision: '^1.0.0' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
      },
    };
    const applied = await fleet.call('POST', '/api/v1/appsets', doc, 'alice-admin');
    expect(applied.status).toBeLessThan(300);
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
    await charts?.stop();
    rmSync(keys, { recursive: true, force: true });
  }, 60_000);

  it('refuses bad settings naming the field, and changes nothing', async () => {
    await released('1.0.0');
    const cases: [unknown, string, string][] = [
      [{ url: charts.url, verify: 'always', gpgKeys: signerKeyring }, 'verify', 'invalid-input'],
      [{ verify: 'required', gpgKeys: signerKeyring }, 'url', 'invalid-input'],
      [
        { url: 'ftp://charts.example.com', verify: 'required', gpgKeys: signerKeyring },
        'url',
        'invalid-chart-repository-url',
      ],
      [{ url: charts.url, verify: 'required' }, 'gpgKeys', 'no-allowed-keys'],
      [
        { url: charts.url, verify: 'when-present', gpgKeys: '-----BEGIN PGP PUBLIC KEY BLOCK-----\nnope\n' },
        'gpgKeys',
        'invalid-gpg-keys',
      ],
      [{ url: charts.url, verify: 'required', gpgKeys: signerKeyring, extra: 1 }, '', 'invalid-input'],
    ];
    for (const [body, path, code] of cases) {
      const answer = await setVerification(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      if (path !== '') expect(answer.body.path, JSON.stringify(body)).toBe(path);
      if (code !== 'invalid-input') expect(answer.body.code).toBe(code);
    }
    const now = await fleet.call<{ verify: string }[]>(
      'GET',
      `/api/v1/chart-repositories/verification?url=${encodeURIComponent(charts.url)}`,
    );
    expect(now.body).toEqual([
      expect.objectContaining({ url: charts.url, verify: 'none', fingerprints: [] }),
    ]);
    const history = await fleet.call<unknown[]>(
      'GET',
      `/api/v1/chart-repositories/verification/history?url=${encodeURIComponent(charts.url)}`,
    );
    expect(history.body).toEqual([]);
    expect((await fleet.call('GET', '/api/v1/chart-repositories/verification/history')).body).toEqual([]);
  }, 120_000);

  it('required: a signed chart is released; a .prov of another package is refused, audited once', async () => {
    const set = await setVerification({ url: `${charts.url}/`, verify: 'required', gpgKeys: signerKeyring });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ verify: 'required', fingerprints: [signerFingerprint] });
    await expand();
    await released('1.0.0');
    const db = fleet.hub.app.get(Database).prisma;
    await expect
      .poll(() => db.chartVerification.findMany({ where: { version: '1.0.0', verified: true } }), poll)
      .toEqual([
        expect.objectContaining({ signer: 'Chart Signer <charts@example.com>', verify: 'required' }),
      ]);

    // 1.1.0 is published signed, but served with 1.0.0's provenance: it does not sign this package.
    charts.publish(webChart('1.1.0'), signer);
    charts.serve('web-1.1.0.tgz.prov', charts.read('web-1.0.0.tgz.prov'));
    await expand();
    await refused('1.1.0', /chart unverified \(verify: required\)/, '1.0.0');
    await expand();
    await expect
      .poll(
        async () => (await audited('chart.unverified')).filter((e) => e.details['version'] === '1.1.0'),
        poll,
      )
      .toHaveLength(1);
    const [event] = (await audited('chart.unverified')).filter((e) => e.details['version'] === '1.1.0');
    expect(event!.details).toMatchObject({ repository: charts.url, chart: 'web', verify: 'required' });
    const explained = await fleet.call<{ appSetStatus: { error: { code: string } | null } }>(
      'GET',
      '/api/v1/explain?cluster=eu-1&appset=charts',
    );
    expect(explained.body.appSetStatus.error?.code).toBe('chart-unverified');
  }, 120_000);

  it('an unsigned chart: refused under required, released under when-present; switching re-judges', async () => {
    // 1.1.0's provenance removed, and 1.2.0 published unsigned: the newest in range has none.
    charts.serve('web-1.1.0.tgz.prov', null);
    charts.publish(webChart('1.2.0'));
    await expand();
    await refused('1.2.0', /has no provenance file \(verify: required\)/, '1.0.0');

    expect(
      (await setVerification({ url: charts.url, verify: 'when-present', gpgKeys: signerKeyring })).status,
    ).toBe(200);
    await released('1.2.0');

    expect(
      (await setVerification({ url: charts.url, verify: 'required', gpgKeys: signerKeyring })).status,
    ).toBe(200);
    await refused('1.2.0', /has no provenance file/, '1.2.0');

    const cli = async (...args: string[]) =>
      (
        await promisify(execFile)(process.execPath, [CLI, ...args], {
          env: { ...process.env, ...fleet.cliEnv },
        })
      ).stdout;
    expect(await cli('chart-repositories', 'verification', charts.url)).toContain(signerFingerprint);
    const history = (await cli('chart-repositories', 'verification-history', charts.url)).trim().split('\n');
    expect(history).toHaveLength(4);
    expect(history[1]).toMatch(/ required /);
    // The listing of every repository's setting names who set it last, as the single view does.
    const listed = await fleet.call<ChartRepositoryVerificationView[]>(
      'GET',
      '/api/v1/chart-repositories/verification',
    );
    expect(listed.body).toEqual([
      expect.objectContaining({ url: charts.url, verify: 'required', fingerprints: [signerFingerprint] }),
    ]);
    expect(listed.body[0]!.setBy).toEqual(expect.any(String));
    const changes = await audited('chart-repository.verification-set');
    expect(changes[0]!.details).toMatchObject({
      url: charts.url,
      verify: 'required',
      previous: { verify: 'when-present', fingerprints: [signerFingerprint] },
    });
  }, 120_000);

  it('a preview of a refused chart answers chart-unverified and records nothing', async () => {
    const db = fleet.hub.app.get(Database).prisma;
    charts.publish(webChart('1.3.0'));
    const doc = {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'charts-preview' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }] } }],
        template: {
          metadata: { name: 'charts-preview-{{cluster}}' },
          spec: {
            source: { repoURL: charts.url, chart: 'web', targetRevision: '1.3.0' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
      },
    };
    const preview = await fleet.call<ErrorAnswer>('POST', '/api/v1/appsets/preview', doc, 'alice-admin');
    expect(preview.status).toBe(422);
    expect(preview.body.code).toBe('chart-unverified');
    expect(preview.body.message).toContain('web-1.3.0.tgz has no provenance file (verify: required)');
    expect(await db.chartVerification.count({ where: { version: '1.3.0' } })).toBe(0);
    expect((await audited('chart.unverified')).filter((e) => e.details['version'] === '1.3.0')).toEqual([]);
  }, 120_000);
});
