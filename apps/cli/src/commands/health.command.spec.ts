import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { run } from './health.command.js';

const luaDir = join(import.meta.dirname, '../../../../libs/health/src/testdata/lua');
const bin = join(import.meta.dirname, '../../bin/flotilla.js');
const built = existsSync(join(import.meta.dirname, '../../dist/main.js'));
let dir: string;

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function health(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    stderr += `${args.join(' ')}\n`;
  });
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    stdout += `${args.join(' ')}\n`;
  });
  const code = await run(argv);
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-health-'));
  file(
    'deployment.yaml',
    [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: web, generation: 2}',
      'spec: {replicas: 3}',
      'status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 2}',
    ].join('\n'),
  );
  file('configmap.json', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }));
  file(
    'certificate.yaml',
    [
      'apiVersion: cert-manager.io/v1',
      'kind: Certificate',
      'metadata: {name: tls}',
      'status:',
      '  conditions: [{type: Ready, status: "True", message: Certificate is up to date and has not expired}]',
    ].join('\n'),
  );
  file('service.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {type: LoadBalancer}\n');
  file('broken.yaml', 'apiVersion: broken.example.org/v1\nkind: Broken\nmetadata: {name: b}\n');
  file('invalid.yaml', 'kind: [unclosed\n');
  file('list.yaml', '- a\n- b\n');
  file('two.yaml', 'kind: Pod\n---\nkind: Pod\n');
  file(
    'duplicate-key.yaml',
    'apiVersion: v1\nkind: PersistentVolumeClaim\nstatus: {phase: Pending}\nstatus: {phase: Bound}\n',
  );
});

afterEach(() => vi.restoreAllMocks());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('flotilla health', () => {
  it('prints one verdict as one JSON document', async () => {
    const out = await health('-f', join(dir, 'deployment.yaml'), '-o', 'json');
    expect(out.code).toBe(0);
    expect(out.stderr).toBe('');
    expect(out.stdout).toBe(
      '{"status":"Progressing","message":"Waiting for rollout to finish: 2 of 3 updated replicas are available..."}\n',
    );
  });

  it('prints a null status for a kind no rule knows', async () => {
    const out = await health('-f', join(dir, 'configmap.json'), '-o', 'json');
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ status: null, message: '' });
  });

  it('answers a batch with an array in input order', async () => {
    const out = await health(
      '-f',
      join(dir, 'configmap.json'),
      '-f',
      join(dir, 'deployment.yaml'),
      '-f',
      join(dir, 'service.yaml'),
      '-o',
      'json',
    );
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual([
      { status: null, message: '' },
      {
        status: 'Progressing',
        message: 'Waiting for rollout to finish: 2 of 3 updated replicas are available...',
      },
      { status: 'Progressing', message: '' },
    ]);
  });

  it('runs custom Lua rules from --lua-dir, overriding built-in ones', async () => {
    const out = await health(
      '--lua-dir',
      luaDir,
      '-f',
      join(dir, 'certificate.yaml'),
      '-f',
      join(dir, 'service.yaml'),
      '-f',
      join(dir, 'deployment.yaml'),
      '-o',
      'json',
    );
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual([
      { status: 'Healthy', message: 'Certificate is up to date and has not expired' },
      { status: 'Degraded', message: 'this cluster has no load balancer controller' },
      {
        status: 'Progressing',
        message: 'Waiting for rollout to finish: 2 of 3 updated replicas are available...',
      },
    ]);
  });

  it('follows symbolic links inside --lua-dir', async () => {
    const linked = join(dir, 'linked-lua');
    mkdirSync(linked);
    symlinkSync(join(luaDir, 'cert-manager.io'), join(linked, 'cert-manager.io'));
    const out = await health('--lua-dir', linked, '-f', join(dir, 'certificate.yaml'), '-o', 'json');
    expect(JSON.parse(out.stdout)).toEqual({
      status: 'Healthy',
      message: 'Certificate is up to date and has not expired',
    });
  });

  it('reports a failing script as Unknown with its error, still exit 0', async () => {
    const out = await health('--lua-dir', luaDir, '-f', join(dir, 'broken.yaml'), '-o', 'json');
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({
      status: 'Unknown',
      message: "broken.example.org/Broken/health.lua:4: attempt to index a nil value (field 'status')",
    });
  });

  it('accepts a repeated key with the last value winning, as Kubernetes YAML does', async () => {
    const out = await health('-f', join(dir, 'duplicate-key.yaml'), '-o', 'json');
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ status: 'Healthy', message: '' });
  });

  it('prints YAML and a table too', async () => {
    const yaml = await health('-f', join(dir, 'deployment.yaml'), '-o', 'yaml');
    expect(parse(yaml.stdout)).toEqual({
      status: 'Progressing',
      message: 'Waiting for rollout to finish: 2 of 3 updated replicas are available...',
    });
    const table = await health('-f', join(dir, 'deployment.yaml'), '-f', join(dir, 'configmap.json'));
    expect(table.stdout).toBe(
      'Progressing  Waiting for rollout to finish: 2 of 3 updated replicas are available...\n-\n',
    );
  });

  it.each([
    ['a missing file', ['-f', '/nonexistent/object.yaml'], 'cannot read /nonexistent/object.yaml: ENOENT'],
    ['invalid YAML', ['-f', 'invalid.yaml'], 'invalid YAML'],
    ['a document that is not an object', ['-f', 'list.yaml'], 'expected one Kubernetes object'],
    ['two documents in one file', ['-f', 'two.yaml'], 'expected one document, found 2'],
    ['no -f', [], 'health needs at least one -f OBJECT'],
    ['an unknown option', ['--frobnicate'], "unknown option '--frobnicate'"],
    [
      'a missing --lua-dir',
      ['-f', 'deployment.yaml', '--lua-dir', '/nonexistent/lua'],
      'cannot read --lua-dir',
    ],
  ])('exits 2 with a message on stderr for %s', async (_label, argv, message) => {
    const args = argv.map((a) => (a.endsWith('.yaml') && !a.startsWith('/') ? join(dir, a) : a));
    const out = await health(...args, '-o', 'json');
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain(message);
    expect(out.stderr.startsWith('flotilla: ')).toBe(true);
  });

  it('prints its usage with --help', async () => {
    const out = await health('--help');
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('usage: flotilla health -f OBJECT');
  });
});

// `npm test` builds the CLI first; the real binary must load the Lua VM lazily from its compiled form too.
describe.skipIf(!built)('the flotilla binary', () => {
  it('runs a batch with --lua-dir in one process', () => {
    const child = spawnSync(
      process.execPath,
      [
        bin,
        'health',
        '--lua-dir',
        luaDir,
        '-f',
        join(dir, 'certificate.yaml'),
        '-f',
        join(dir, 'deployment.yaml'),
        '-o',
        'json',
      ],
      { encoding: 'utf8' },
    );
    expect(child.status).toBe(0);
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual([
      { status: 'Healthy', message: 'Certificate is up to date and has not expired' },
      {
        status: 'Progressing',
        message: 'Waiting for rollout to finish: 2 of 3 updated replicas are available...',
      },
    ]);
  });

  it('exits 2 with one line on stderr for unreadable input', () => {
    const child = spawnSync(
      process.execPath,
      [bin, 'health', '-f', join(dir, 'missing.yaml'), '-o', 'json'],
      {
        encoding: 'utf8',
      },
    );
    expect(child.status).toBe(2);
    expect(child.stdout).toBe('');
    expect(child.stderr.trim().split('\n')).toHaveLength(1);
  });
});
