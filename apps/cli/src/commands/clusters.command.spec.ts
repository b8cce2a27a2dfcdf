import { clusterViewSchema } from '@flotilla/contract';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { UsageError } from '../offline/offline-command.js';
import { parseLabels, run } from './clusters.command.js';

afterEach(() => vi.unstubAllEnvs());

describe('flotilla clusters without a hub', () => {
  it('exits 1 naming the URL when nothing listens there', async () => {
    const port = await freePort();
    const hub = `http://127.0.0.1:${port}`;
    const r = await runInProcess(run, ['list', '--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      `flotilla clusters: cannot reach the hub at ${hub}: connect ECONNREFUSED 127.0.0.1:${port}
`,
    );
  });

  it.each([
    [['frob'], "unknown sub-command 'frob'; expected list, get, add, token or revoke"],
    [['get'], 'missing NAME; usage: flotilla clusters get NAME'],
    [['get', 'a', 'b'], "unexpected argument 'b'; usage: flotilla clusters get NAME"],
    [['add', 'eu1', '--label', 'novalue'], "--label must be key=value, not 'novalue'"],
    [['list', '--label', 'a=b'], "--label applies to 'clusters add' only"],
    [['list', '-o', 'xml'], "-o must be table, wide, json or yaml, not 'xml'"],
    [['get', 'eu1', '-o', 'xml'], "-o must be table, json or yaml, not 'xml'"],
    // Refused before the hub is asked: nothing is registered.
    [
      ['add', 'eu1', '-o', 'wide'],
      '-o wide is for listings (flotilla clusters or flotilla clusters list); flotilla clusters add takes -o table, json or yaml',
    ],
    [['list', '--hub', 'ftp://hub'], "--hub must be an http(s) URL, not 'ftp://hub'"],
    [['list', '--nope'], "unknown option '--nope'"],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla clusters: ${message}`);
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
  });

  it('prints its usage for --help', async () => {
    const r = await runInProcess(run, ['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('flotilla clusters add NAME [--label k=v]...');
    expect(r.out).toContain('--hub URL');
  });
});

describe('parseLabels', () => {
  it('reads key=value pairs, allowing an empty value and = inside the value', () => {
    expect(parseLabels(['env=prod', 'empty=', 'expr=a=b'])).toEqual({ env: 'prod', empty: '', expr: 'a=b' });
  });

  it('refuses an empty key and a repeated key', () => {
    expect(() => parseLabels(['=x'])).toThrow(new UsageError("--label must be key=value, not '=x'"));
    expect(() => parseLabels(['a=1', 'a=2'])).toThrow(new UsageError('--label a is given twice'));
  });
});

describe('flotilla clusters list -o wide against a stand-in hub', () => {
  const cluster = clusterViewSchema.parse({
    id: 'c1',
    name: 'eu1',
    server: 'https://eu1.k8s.example:6443',
    labels: { env: 'prod' },
    annotations: {},
    registered: true,
    agentVersion: '1.4.0',
    agentFeatures: ['prune-candidates', 'dry-run'],
    capabilities: { kubeVersion: 'v1.33.1', apiVersions: ['v1'], reportedAt: null },
    lastSeenAt: null,
    createdAt: '2026-12-01T00:00:00.000Z',
    targets: { total: 3, synced: 1, outOfSync: 2, unknown: 0, healthy: 2, degraded: 1 },
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({ '/api/v1/clusters': [cluster] });
  });
  afterAll(() => hub.close());

  it('adds the API server, the agent features, the Kubernetes version and the failing targets', async () => {
    const table = await runInProcess(run, ['list', '--hub', hub.url]);
    expect(table.code).toBe(0);
    expect(headersOf(table.out)).toEqual([
      'NAME',
      'REGISTERED',
      'AGENT',
      'LAST SEEN',
      'TARGETS',
      'SYNCED',
      'HEALTHY',
      'LABELS',
    ]);
    const wide = await runInProcess(run, ['--hub', hub.url, '-o', 'wide']);
    expect(wide.err).toBe('');
    expect(wide.code).toBe(0);
    expect(rowOf(wide.out)).toEqual({
      NAME: 'eu1',
      SERVER: 'https://eu1.k8s.example:6443',
      REGISTERED: 'yes',
      AGENT: '1.4.0',
      FEATURES: 'prune-candidates,dry-run',
      'KUBE VERSION': 'v1.33.1',
      'LAST SEEN': '-',
      TARGETS: '3',
      SYNCED: '1',
      'OUT OF SYNC': '2',
      HEALTHY: '2',
      DEGRADED: '1',
      LABELS: 'env=prod',
    });
    expect(headersOf(wide.out)).toEqual(Object.keys(rowOf(wide.out)));
  });
});
