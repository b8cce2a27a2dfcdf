import { describe, expect, it } from 'vitest';
import { ManifestError } from '../manifest-error.js';
import {
  chartLayerOf,
  HELM_CHART_LAYER_MEDIA_TYPE,
  ociChartReference,
  parseAuthChallenge,
  tagOfVersion,
  versionOfTag,
} from './oci-reference.js';

describe('ociChartReference', () => {
  it('puts the chart under the path, as helm pull oci://host/path/chart does', () => {
    expect(ociChartReference('oci://ghcr.io/org/charts', 'web', 'at')).toEqual({
      registry: 'ghcr.io',
      repository: 'org/charts/web',
      apiBase: 'https://ghcr.io',
    });
    expect(ociChartReference('oci://registry.example.com:5443/', 'web', 'at').repository).toBe('web');
  });

  it('speaks plain HTTP only to loopback registries', () => {
    expect(ociChartReference('oci://127.0.0.1:5000/c', 'web', 'at').apiBase).toBe('http://127.0.0.1:5000');
    expect(ociChartReference('oci://localhost:5000/c', 'web', 'at').apiBase).toBe('http://localhost:5000');
    expect(ociChartReference('oci://[::1]:5000/c', 'web', 'at').apiBase).toBe('http://[::1]:5000');
    expect(ociChartReference('oci://10.0.0.1:5000/c', 'web', 'at').apiBase).toBe('https://10.0.0.1:5000');
  });

  it.each([
    ['https://charts.example.com', 'web', 'is not an OCI registry URL'],
    ['oci://user:pw@registry.example.com/c', 'web', 'without credentials'],
    ['oci://registry.example.com/c?x=1', 'web', 'without credentials, query or fragment'],
    ['oci://registry.example.com/c', 'Web', 'is not a valid repository name'],
    ['oci://registry.example.com/c', '../x', 'is not a valid repository name'],
  ])('refuses %s with chart %s, naming the field', (url, chart, message) => {
    let error: unknown;
    try {
      ociChartReference(url, chart, 'spec.source.repoURL');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ManifestError);
    const { code, file } = error as ManifestError;
    expect([code, file]).toEqual(['manifest-invalid-source', 'spec.source.repoURL']);
    expect((error as ManifestError).message).toContain(message);
  });
});

describe('tags and versions', () => {
  it('reads back the + that Helm stores as _ in a tag', () => {
    expect(versionOfTag('1.2.0_build.7')).toBe('1.2.0+build.7');
    expect(tagOfVersion('1.2.0+build.7')).toBe('1.2.0_build.7');
    expect(versionOfTag('1.0.0')).toBe('1.0.0');
  });
});

describe('chartLayerOf', () => {
  const digest = `sha256:${'a'.repeat(64)}`;
  it("finds the chart package among a manifest's layers", () => {
    const manifest = {
      layers: [
        {
          mediaType: 'application/vnd.cncf.helm.chart.provenance.v1.prov',
          digest: `sha256:${'b'.repeat(64)}`,
        },
        { mediaType: HELM_CHART_LAYER_MEDIA_TYPE, digest, size: 1234 },
      ],
    };
    expect(chartLayerOf(manifest, 'where')).toEqual({ digest, size: 1234 });
  });

  it('refuses an image that is not a chart, or a layer without a sha256 digest', () => {
    expect(() =>
      chartLayerOf({ layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest }] }, 'w'),
    ).toThrow(/holds no Helm chart/);
    expect(() =>
      chartLayerOf({ layers: [{ mediaType: HELM_CHART_LAYER_MEDIA_TYPE, digest: 'md5:x' }] }, 'w'),
    ).toThrow(/holds no Helm chart/);
    expect(() => chartLayerOf({ schemaVersion: 1 }, 'w')).toThrow(/no "layers"/);
  });
});

describe('parseAuthChallenge', () => {
  it('reads a Bearer challenge as registries send it', () => {
    expect(
      parseAuthChallenge(
        'Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:org/web:pull"',
      ),
    ).toEqual({
      scheme: 'bearer',
      params: { realm: 'https://ghcr.io/token', service: 'ghcr.io', scope: 'repository:org/web:pull' },
    });
  });

  it('reads Basic, and an empty header as no scheme', () => {
    expect(parseAuthChallenge('Basic realm="Registry Realm"')).toEqual({
      scheme: 'basic',
      params: { realm: 'Registry Realm' },
    });
    expect(parseAuthChallenge('')).toEqual({ scheme: '', params: {} });
  });
});
