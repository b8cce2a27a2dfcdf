import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { run, type ValidateReport } from './validate.command.js';
import { runInProcess, type CommandOutcome } from '../testing/run-in-process.js';

const CASES = new URL('../../../../libs/fleet-config/src/testdata/cases/', import.meta.url).pathname;
const EXAMPLE = new URL('../../../../examples/fleet-repo', import.meta.url).pathname;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-validate-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const flotillaValidate = (...argv: string[]): Promise<CommandOutcome> => runInProcess(run, argv);

const WINDOW = `apiVersion: flotilla.dev/v1alpha1
kind: SyncWindow
metadata:
  name: nightly
spec:
  kind: allow
  schedule: "0 22 * * *"
  duration: 2h
`;

describe('flotilla validate', () => {
  it('shows a YAML syntax error as file:line with the offending line and a caret under it', async () => {
    const fleet = join(dir, 'broken-yaml');
    mkdirSync(fleet, { recursive: true });
    writeFileSync(
      join(fleet, 'window.yaml'),
      'apiVersion: flotilla.dev/v1alpha1\nkind: SyncWindow\nmetadata:\n  name: [nightly\n',
    );
    const table = await flotillaValidate(fleet);
    expect(table.code).toBe(1);
    const lines = table.out.split('\n');
    const at = lines.findIndex((l) => l.startsWith('window.yaml:'));
    expect(lines[at]).toMatch(/^window\.yaml:\d+: -: \(root\): .+/);
    // The excerpt: the source line, then a caret in the column the parser stopped at, indented.
    const caret = lines.slice(at + 1).find((l) => l.trim() === '^');
    expect(caret).toBeDefined();
    expect(lines.slice(at + 1).some((l) => l.includes('name: [nightly'))).toBe(true);

    const json = JSON.parse((await flotillaValidate(fleet, '-o', 'json')).out) as ValidateReport;
    expect(json.errors[0]).toMatchObject({ code: 'invalid-yaml', file: 'window.yaml' });
    expect(json.errors[0]?.excerpt).toContain('^');
  });

  it('accepts the example fleet repository: exit 0, every object listed with its file', async () => {
    const { code, out, err } = await flotillaValidate(EXAMPLE, '-o', 'json');
    expect(err).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(out) as ValidateReport;
    expect(report.valid).toBe(true);
    expect(report.errors).toEqual([]);
    expect(report.objects).toContainEqual({
      kind: 'RolloutStrategy',
      name: 'canary-first',
      file: 'rollouts/canary-first.yaml',
    });
    expect(report.objects).toContainEqual({
      kind: 'HealthRule',
      name: 'cert-manager.io/Certificate',
      file: 'resource_customizations/cert-manager.io/Certificate/health.lua',
    });
    expect(report.objects).toContainEqual({
      kind: 'ValidatingAdmissionPolicy',
      name: 'trusted-registries',
      file: 'policies/trusted-registries.yaml',
    });
    expect(report.objects).toContainEqual({
      kind: 'ConfigMap',
      name: 'replica-limit',
      file: 'policies/replica-limit.yaml',
    });
    expect(report.objects).toHaveLength(16);
  });

  it.each(readdirSync(CASES).sort())('reports the %s fixture as expected.json says', async (name) => {
    const expected = JSON.parse(readFileSync(join(CASES, name, 'expected.json'), 'utf8')) as {
      valid: boolean;
      objects: { kind: string; name: string; file: string }[];
      errors: ValidateReport['errors'];
    };
    const { code, out } = await flotillaValidate(join(CASES, name), '-o', 'json');
    expect(code).toBe(expected.valid ? 0 : 1);
    expect(JSON.parse(out)).toEqual({
      valid: expected.valid,
      objects: expected.objects.map((o) => ({ kind: o.kind, name: o.name, file: o.file })),
      errors: expected.errors.map((e) => ({
        file: e.file,
        document: e.document,
        line: e.line,
        kind: e.kind,
        name: e.name,
        path: e.path,
        message: e.message,
        code: e.code,
        ...(e.excerpt !== undefined && { excerpt: e.excerpt }),
      })),
    });
  });

  it('prints one line per error as file:line: kind/name: path: message, then a summary', async () => {
    const { code, out } = await flotillaValidate(join(CASES, 'dangling-reference'));
    expect(code).toBe(1);
    expect(out.trimEnd().split('\n')).toEqual([
      "objects.yaml:6: ApplicationSet/guestbook: spec.project: project 'team-b' does not exist: no Project of that name in the repository",
      "objects.yaml:7: ApplicationSet/guestbook: spec.rolloutStrategy: rollout strategy 'canary-first' does not exist: no RolloutStrategy of that name in the repository",
      "objects.yaml:34: ApplicationSet/argo-guestbook: spec.template.spec.project: project 'team-c' does not exist: no Project of that name in the repository",
      "objects.yaml:50: SyncWindow/freeze: spec.projects[1]: project 'team-d' does not exist: no Project of that name in the repository",
      "objects.yaml:61: Project/team-a: spec.syncWindows[1]: sync window 'holidays' does not exist: no SyncWindow of that name in the repository",
      'invalid: 5 errors (0 valid objects in 1 file); nothing would change',
    ]);
  });

  it('prints a one-line summary for a valid repository', async () => {
    const { code, out } = await flotillaValidate(EXAMPLE);
    expect(code).toBe(0);
    expect(out).toBe(
      'valid: 16 valid objects in 9 files (ApplicationSet 2, ClusterGroup 3, ConfigMap 1, HealthRule 1, Project 2, RolloutStrategy 1, SyncWindow 2, ValidatingAdmissionPolicy 2, ValidatingAdmissionPolicyBinding 2)\n',
    );
  });

  it('refuses symbolic links (to a file or a directory) and skips hidden directories', async () => {
    const repo = join(dir, 'links');
    const outside = join(dir, 'outside');
    mkdirSync(join(repo, '.git'), { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'window.yaml'), WINDOW);
    writeFileSync(join(repo, 'window.yaml'), WINDOW.replace('nightly', 'local'));
    writeFileSync(join(repo, '.git', 'config.yaml'), 'not: [a fleet object\n');
    symlinkSync(join(outside, 'window.yaml'), join(repo, 'linked.yaml'));
    symlinkSync(outside, join(repo, 'linked-dir'));
    const { code, out } = await flotillaValidate(repo, '-o', 'json');
    expect(code).toBe(1);
    const report = JSON.parse(out) as ValidateReport;
    expect(report.objects).toEqual([{ kind: 'SyncWindow', name: 'local', file: 'window.yaml' }]);
    expect(report.errors.map((e) => [e.code, e.file])).toEqual([
      ['invalid-path', 'linked-dir'],
      ['invalid-path', 'linked.yaml'],
    ]);
    expect(report.errors[0]?.message).toContain('symbolic link refused');
  });

  it('exits 2 with one line on stderr for usage errors and unreadable directories', async () => {
    const file = join(dir, 'file.yaml');
    writeFileSync(file, WINDOW);
    for (const argv of [
      [],
      [dir, dir],
      [dir, '-o', 'xml'],
      [join(dir, 'missing')],
      [file],
      [dir, '--bogus'],
    ]) {
      const { code, out, err } = await flotillaValidate(...argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(out).toBe('');
      expect(err.startsWith('flotilla: ')).toBe(true);
    }
    const missing = await flotillaValidate(join(dir, 'missing'));
    expect(missing.err).toBe(`flotilla: cannot read ${join(dir, 'missing')}: ENOENT\n`);
  });

  it('checks health rules under resource_customizations: a script that does not compile is named', async () => {
    const repo = join(dir, 'rules-repo');
    const rules = join(repo, 'resource_customizations');
    mkdirSync(join(rules, 'cert-manager.io', 'Certificate', 'testdata'), { recursive: true });
    mkdirSync(join(rules, 'example.com', 'Widget'), { recursive: true });
    writeFileSync(join(repo, 'window.yaml'), WINDOW);
    writeFileSync(
      join(rules, 'cert-manager.io', 'Certificate', 'health.lua'),
      'return { status = "Healthy" }\n',
    );
    // Argo CD's test data beside a script is YAML but no fleet object: it is left alone.
    writeFileSync(
      join(rules, 'cert-manager.io', 'Certificate', 'testdata', 'ready.yaml'),
      'kind: Certificate\n',
    );
    writeFileSync(join(rules, 'example.com', 'Widget', 'health.lua'), 'local hs = {\nreturn hs\n');

    const { code, out } = await flotillaValidate(repo);
    expect(code).toBe(1);
    expect(out.trimEnd().split('\n')).toEqual([
      "resource_customizations/example.com/Widget/health.lua:2: HealthRule/example.com/Widget: (root): unexpected symbol near 'return'",
      'invalid: 1 error (2 valid objects in 3 files); nothing would change',
    ]);

    writeFileSync(join(rules, 'example.com', 'Widget', 'health.lua'), 'return { status = "Healthy" }\n');
    const fixed = await flotillaValidate(repo, '-o', 'json');
    expect(fixed.code).toBe(0);
    expect((JSON.parse(fixed.out) as ValidateReport).objects).toEqual([
      { kind: 'SyncWindow', name: 'nightly', file: 'window.yaml' },
      {
        kind: 'HealthRule',
        name: 'cert-manager.io/Certificate',
        file: 'resource_customizations/cert-manager.io/Certificate/health.lua',
      },
      {
        kind: 'HealthRule',
        name: 'example.com/Widget',
        file: 'resource_customizations/example.com/Widget/health.lua',
      },
    ]);
  });

  it('prints yaml with -o yaml', async () => {
    const { code, out } = await flotillaValidate(join(CASES, 'bad-cron'), '-o', 'yaml');
    expect(code).toBe(1);
    expect(out).toContain('valid: false');
    expect(out).toContain('code: invalid-schedule');
  });
});
