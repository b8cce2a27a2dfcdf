import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { run } from './diff.command.js';

let dir: string;
const file = (name: string): string => join(dir, name);

const desired = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - {name: web, image: "web:1.0", resources: {limits: {cpu: 1000m}}}
`;
const liveInSync = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, uid: abc, resourceVersion: "9"}
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  template:
    spec:
      containers:
        - {name: web, image: "web:1.0", imagePullPolicy: IfNotPresent, resources: {limits: {cpu: "1"}}}
status: {replicas: 2}
`;
const liveDrifted = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {stale: "yes"}
  managedFields:
    - {manager: deployer, operation: Apply, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:labels": {"f:stale": {}}}}}
    - {manager: keda, operation: Update, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:replicas": {}}}}
spec:
  replicas: 5
  template:
    spec:
      containers:
        - {name: web, image: "web:1.1"}
`;

interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

async function flotillaDiff(...argv: string[]): Promise<Captured> {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    stdout += `${args.join(' ')}\n`;
  });
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    stderr += `${args.join(' ')}\n`;
  });
  const code = await run(argv);
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-diff-'));
  writeFileSync(file('desired.yaml'), desired);
  writeFileSync(file('live-in-sync.yaml'), liveInSync);
  writeFileSync(file('live-drifted.yaml'), liveDrifted);
  writeFileSync(
    file('desired.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } }),
  );
  writeFileSync(
    file('live.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '2' } }),
  );
  writeFileSync(file('rules.yaml'), '- {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}\n');
  writeFileSync(
    file('rules-argo.yaml'),
    'ignoreDifferences:\n  - group: apps\n    kind: Deployment\n    jqPathExpressions: [\'.spec.template.spec.containers[] | select(.name == "web") | .image\']\n',
  );
  writeFileSync(
    file('bad-jq.yaml'),
    '- {group: apps, kind: Deployment, jqPathExpressions: [".spec | select(.x =="]}\n',
  );
  writeFileSync(file('no-kind.yaml'), '- {group: apps, jsonPointers: [/spec/replicas]}\n');
  writeFileSync(file('broken.yaml'), 'kind: [unclosed\n');
  writeFileSync(file('two.yaml'), 'kind: A\n---\nkind: B\n');
  writeFileSync(file('empty.yaml'), '# nothing here\n');
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('flotilla diff', () => {
  it('prints one JSON document and exits 0 when in sync', async () => {
    const r = await flotillaDiff(
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-in-sync.yaml'),
      '-o',
      'json',
    );
    expect(r).toEqual({ code: 0, stdout: '{"inSync":true,"differences":[]}\n', stderr: '' });
  });

  it('lists differences sorted by path and still exits 0', async () => {
    const r = await flotillaDiff(
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-drifted.yaml'),
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      inSync: false,
      differences: [
        { path: '/spec/replicas', desired: 2, live: 5 },
        { path: '/spec/template/spec/containers/0/image', desired: 'web:1.0', live: 'web:1.1' },
        { path: '/spec/template/spec/containers/0/resources/limits/cpu', desired: '1000m', live: null },
      ],
    });
  });

  it('counts fields owned by the --manager that the manifest dropped, and yields to --yield managers', async () => {
    const r = await flotillaDiff(
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-drifted.yaml'),
      '--manager',
      'deployer',
      '--yield',
      'keda',
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    expect(
      (JSON.parse(r.stdout) as { differences: { path: string }[] }).differences.map((d) => d.path),
    ).toEqual([
      '/metadata/labels/stale',
      '/spec/template/spec/containers/0/image',
      '/spec/template/spec/containers/0/resources/limits/cpu',
    ]);
  });

  it('reads ignore rules as a YAML list or as Argo CD ignoreDifferences', async () => {
    const list = await flotillaDiff(
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-drifted.yaml'),
      '--ignore',
      file('rules.yaml'),
      '-o',
      'json',
    );
    expect(
      (JSON.parse(list.stdout) as { differences: { path: string }[] }).differences.map((d) => d.path),
    ).toEqual([
      '/spec/template/spec/containers/0/image',
      '/spec/template/spec/containers/0/resources/limits/cpu',
    ]);
    const argo = await flotillaDiff(
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-drifted.yaml'),
      '--ignore',
      file('rules-argo.yaml'),
      '-o',
      'json',
    );
    expect(
      (JSON.parse(argo.stdout) as { differences: { path: string }[] }).differences.map((d) => d.path),
    ).toEqual(['/spec/replicas', '/spec/template/spec/containers/0/resources/limits/cpu']);
  });

  it('exits 1 with {"error"} naming the file and rule for an unparseable jq expression', async () => {
    const r = await flotillaDiff(
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-in-sync.yaml'),
      '--ignore',
      file('bad-jq.yaml'),
      '-o',
      'json',
    );
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { error: string };
    expect(Object.keys(out)).toEqual(['error']);
    expect(out.error).toContain(
      `${file('bad-jq.yaml')}: ignoreRules[0].jqPathExpressions[0]: invalid jq path expression`,
    );
  });

  it('exits 1 for a rule of the wrong shape', async () => {
    const r = await flotillaDiff(
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-in-sync.yaml'),
      '--ignore',
      file('no-kind.yaml'),
      '-o',
      'json',
    );
    expect(r.code).toBe(1);
    expect((JSON.parse(r.stdout) as { error: string }).error).toContain(
      'invalid ignore rule [0].kind: Invalid input: expected string, received undefined',
    );
  });

  it.each([
    ['a missing file', ['--desired', 'nope.yaml', '--live', 'live.json'], 'nope.yaml: ENOENT'],
    ['invalid YAML', ['--desired', 'broken.yaml', '--live', 'live.json'], 'broken.yaml:2: invalid YAML'],
    [
      'two documents',
      ['--desired', 'two.yaml', '--live', 'live.json'],
      'two.yaml: expected one document, found 2',
    ],
    ['no --live', ['--desired', 'desired.yaml'], 'diff needs --desired FILE and --live FILE'],
    [
      'an unknown flag',
      ['--desired', 'desired.yaml', '--live', 'live.json', '--colour'],
      "unknown option '--colour'",
    ],
  ])('exits 2 with one line on stderr for %s', async (_name, args, message) => {
    const argv = args.map((a) => (a.endsWith('.yaml') || a.endsWith('.json') ? file(a) : a));
    const r = await flotillaDiff(...argv, '-o', 'json');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(message);
  });

  it('reads JSON input and prints a batch as an array in input order', async () => {
    const r = await flotillaDiff(
      '--desired',
      file('desired.json'),
      '--live',
      file('live.json'),
      '--desired',
      file('desired.yaml'),
      '--live',
      file('live-in-sync.yaml'),
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { inSync: false, differences: [{ path: '/data/a', desired: '1', live: '2' }] },
      { inSync: true, differences: [] },
    ]);
  });

  it('prints a human table by default and YAML with -o yaml', async () => {
    const table = await flotillaDiff('--desired', file('desired.json'), '--live', file('live.json'));
    expect(table.stdout).toBe(
      'out of sync: 1 difference(s)\n  /data/a\n    desired: "1"\n    live:    "2"\n',
    );
    const yaml = await flotillaDiff(
      '--desired',
      file('desired.json'),
      '--live',
      file('live.json'),
      '-o',
      'yaml',
    );
    expect(yaml.stdout).toBe(
      'inSync: false\ndifferences:\n  - path: /data/a\n    desired: "1"\n    live: "2"\n',
    );
  });

  it('treats an empty live file as an object the cluster does not have', async () => {
    const r = await flotillaDiff(
      '--desired',
      file('desired.json'),
      '--live',
      file('empty.yaml'),
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      inSync: false,
      differences: [
        {
          path: '',
          desired: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } },
          live: null,
        },
      ],
    });
  });

  it('prints help and exits 0', async () => {
    const r = await flotillaDiff('--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: flotilla diff --desired FILE --live FILE');
  });

  describe('flotilla diff TARGET (hub-backed)', () => {
    // Nothing listens on port 9 of 127.0.0.1: the hub cannot be reached.
    const away = ['--hub', 'http://127.0.0.1:9', '--token', 't'];

    it('is chosen by a TARGET without --desired or --live', async () => {
      const r = await flotillaDiff('web-eu-1', ...away);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('flotilla diff:');
      expect(r.stderr).toContain('http://127.0.0.1:9');
    });

    it('with --exit-code, "cannot tell" is 2, never the 1 that means differences', async () => {
      const r = await flotillaDiff('web-eu-1', '--exit-code', ...away);
      expect(r.code).toBe(2);
    });

    it('has its own help, and leaves the offline usage errors as they were', async () => {
      const help = await flotillaDiff('web-eu-1', '--help');
      expect([help.code, help.stdout]).toEqual([
        0,
        expect.stringContaining('usage: flotilla diff TARGET [--exit-code]'),
      ]);
      const offline = await flotillaDiff('-o', 'json');
      expect([offline.code, offline.stderr]).toEqual([
        2,
        expect.stringContaining('diff needs --desired FILE and --live FILE'),
      ]);
    });
  });
});
