import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type PolicyTestReport } from './policy.command.js';

const bin = join(import.meta.dirname, '../../bin/flotilla.js');
const built = existsSync(join(import.meta.dirname, '../../dist/main.js'));
const DATA = join(import.meta.dirname, 'testdata', 'policy');
const POLICIES = join(DATA, 'policies');
const manifest = (name: string): string => join(DATA, 'manifests', name);

function flotilla(argv: string[], input?: string): { code: number | null; stdout: string; stderr: string } {
  const child = spawnSync(process.execPath, [bin, ...argv], { encoding: 'utf8', input, timeout: 20_000 });
  return { code: child.status, stdout: child.stdout, stderr: child.stderr };
}

const ref = (kind: string, name: string, apiVersion = 'apps/v1') => ({
  apiVersion,
  kind,
  namespace: 'shop',
  name,
});

describe.skipIf(!built)('flotilla policy test (the built command)', () => {
  it('exits 1 on a Deny and reports every violation with policy, binding, object and action', () => {
    const { code, stdout, stderr } = flotilla([
      'policy',
      'test',
      '--policies',
      POLICIES,
      '-f',
      manifest('app.yaml'),
      '-o',
      'json',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as PolicyTestReport;
    expect(report.allowed).toBe(false);
    expect(report.objects).toBe(5);
    expect(
      report.violations.map((v) => ({
        policy: v.policy,
        binding: v.binding,
        object: v.object,
        action: v.action,
        message: v.message,
      })),
    ).toEqual([
      {
        policy: 'no-latest-tag',
        binding: 'no-latest-tag-warn',
        object: ref('Deployment', 'web'),
        action: 'Warn',
        message: 'pin image tags instead of latest',
      },
      {
        policy: 'replica-limit',
        binding: 'replica-limit',
        object: ref('Deployment', 'batch'),
        action: 'Deny',
        message: 'at most 5 replicas, got 20',
      },
      {
        // The CRD in the same input names the plural (widgetry) the policy's rule matches.
        policy: 'widget-size',
        binding: 'widget-size',
        object: ref('Widget', 'huge', 'example.com/v1'),
        action: 'Deny',
        message: 'a widget gets less than 1Gi, not 2Gi',
      },
    ]);
    expect(report.violations[1]?.param).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'policy-params',
      name: 'replica-limit',
    });
    expect(report.violations.every((v) => v.file === manifest('app.yaml'))).toBe(true);
  });

  it('prints one line per violation and a summary for people', () => {
    const { code, stdout } = flotilla(['policy', 'test', '--policies', POLICIES, '-f', manifest('app.yaml')]);
    expect(code).toBe(1);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[1]).toBe(
      `DENY   Deployment shop/batch (${manifest('app.yaml')}): replica-limit [replica-limit]: at most 5 replicas, got 20`,
    );
    expect(lines.at(-1)).toBe('denied: 2 of 5 objects (2 denials, 1 warning, 0 audited)');
  });

  it('without the CRD the custom kind is not the resource the policy names, so it passes', () => {
    const { code, stdout } = flotilla([
      'policy',
      'test',
      '--policies',
      POLICIES,
      '-f',
      manifest('widget-without-crd.yaml'),
      '-o',
      'json',
    ]);
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as PolicyTestReport).violations).toEqual([]);
  });

  it('reads a rendered target from standard input and exits 0 when nothing is denied', () => {
    const { code, stdout } = flotilla(
      ['policy', 'test', '--policies', POLICIES, '-f', '-', '--namespace', 'shop'],
      readFileSync(manifest('clean.yaml'), 'utf8'),
    );
    expect(code).toBe(0);
    expect(stdout).toBe('allowed: 1 object (0 warnings, 0 audited)\n');
  });

  it('refuses policies that do not compile, naming the file, the field and the expression', () => {
    const broken = join(DATA, 'invalid', 'broken.yaml');
    const { code, stdout, stderr } = flotilla([
      'policy',
      'test',
      '--policies',
      join(DATA, 'invalid'),
      '-f',
      manifest('clean.yaml'),
    ]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toEqual([
      'flotilla: 3 errors in the policies; nothing evaluated:',
      `${broken}: ValidatingAdmissionPolicy/broken: spec.failurPolicy: unknown field 'failurPolicy'`,
      `${broken}: ValidatingAdmissionPolicy/broken: spec.validations[0].expression: Unexpected token: EOF in CEL expression "object.spec.replicas <= "`,
      `${broken}: ValidatingAdmissionPolicyBinding/orphan: spec.policyName: no ValidatingAdmissionPolicy named 'not-here' among the policies`,
    ]);
  });

  it('exits 2 with one line on stderr for usage errors and unreadable input', () => {
    const missing = flotilla(['policy', 'test', '--policies', POLICIES, '-f', join(DATA, 'nope.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`flotilla: cannot read ${join(DATA, 'nope.yaml')}: ENOENT\n`);
    const noPolicies = flotilla(['policy', 'test', '-f', manifest('clean.yaml')]);
    expect(noPolicies.code).toBe(2);
    expect(noPolicies.stderr.split('\n')[0]).toBe('flotilla: policy test needs --policies DIR');
    const unknown = flotilla(['policy', 'check']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.split('\n')[0]).toBe("flotilla: unknown policy subcommand 'check'");
  });
});
