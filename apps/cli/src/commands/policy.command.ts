import { type CommandDescription } from '../command.js';
import { describeOffline } from '../offline/offline-command.js';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  compilePolicySet,
  evaluatePolicies,
  formatPolicyPath,
  isPolicyDocument,
  policyContext,
  type AdmissionVerdict,
  type KubeObject,
  type ObjectRef,
  type PolicySetError,
} from '@flotilla/policy';
import {
  many,
  offlineCommand,
  readDocuments,
  UsageError,
  type ArgValue,
} from '../offline/offline-command.js';

const USAGE = `usage: flotilla policy test --policies DIR -f MANIFESTS [-f MANIFESTS]... [--namespace NS] [-o json|yaml|table]

Evaluates Kubernetes ValidatingAdmissionPolicies and their bindings
(admissionregistration.k8s.io/v1, unchanged) against manifests, offline, as the
API server would admit them (CREATE), and prints every violation with the policy,
the binding and the object.

  --policies DIR     a directory (or file) of YAML/JSON: policies, bindings and their
                     params (ConfigMaps or any kind a paramKind names); repeatable
  -f, --file PATH    manifests: a YAML/JSON file (several documents, or a List), a
                     directory of them, or - for standard input (flotilla render -o yaml);
                     repeatable. CRDs, Namespaces and params among them are understood.
  --namespace NS     namespace of namespaced objects that name none (the target's)
  -o, --output       json, yaml or table (default)

Exit 0 when nothing is denied (Warn and Audit are printed), 1 when an object is
denied (or a policy fails to evaluate under failurePolicy Fail), 2 on usage, an
unreadable input or a policy that does not compile (each error with its file and
expression on stderr).`;

const OPTIONS = {
  policies: { type: 'string', multiple: true },
  file: { type: 'string', short: 'f', multiple: true },
  namespace: { type: 'string' },
} as const;

/** The JSON report: a public interface (docs/policies.md), extend it, never break it. */
export interface PolicyTestReport {
  allowed: boolean;
  objects: number;
  violations: {
    policy: string;
    binding: string;
    object: ObjectRef;
    file: string;
    action: 'Deny' | 'Warn' | 'Audit';
    type: 'violation' | 'error';
    message: string;
    reason: string;
    expression: string | null;
    param: ObjectRef | null;
  }[];
  auditAnnotations: { policy: string; binding: string; object: ObjectRef; key: string; value: string }[];
  ignoredErrors: { policy: string; binding: string; object: ObjectRef; message: string }[];
}

interface SourcedDocument {
  file: string;
  value: unknown;
}

const YAML_FILE = /\.(ya?ml|json)$/i;

/** A file, `-` (standard input) or every YAML/JSON file under a directory, in name order. */
function readInput(path: string): SourcedDocument[] {
  if (path === '-') return expandLists(readDocuments('-', { uniqueKeys: false }), '-');
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!isDir) return expandLists(readDocuments(path, { uniqueKeys: false }), path);
  const out: SourcedDocument[] = [];
  const entries = readdirSync(path, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const full = join(path, e.name);
    if (e.isDirectory()) out.push(...readInput(full));
    else if (e.isFile() && YAML_FILE.test(e.name))
      out.push(...expandLists(readDocuments(full, { uniqueKeys: false }), full));
  }
  return out;
}

/** `kubectl get -o yaml` and some tools give a `List`; its items are the objects. */
function expandLists(values: unknown[], file: string): SourcedDocument[] {
  return values.flatMap((value) => {
    const v = value as { kind?: unknown; items?: unknown };
    const items =
      typeof v === 'object' && v !== null && v.kind === 'List' && Array.isArray(v.items) ? v.items : [value];
    return items.map((item: unknown) => ({ file, value: item }));
  });
}

function isObject(v: unknown): v is KubeObject {
  return (
    typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as KubeObject).kind === 'string'
  );
}

/** A policy's problem located in its file (what `flotilla validate` says, for a loose directory). */
function located(file: string, e: PolicySetError): string {
  return `${file}: ${e.kind}/${e.name ?? '?'}: ${formatPolicyPath(e.path) || '(root)'}: ${e.message}${
    e.expression === null ? '' : ` in CEL expression ${JSON.stringify(e.expression)}`
  }`;
}

function test(values: Record<string, ArgValue>): PolicyTestReport {
  const policyPaths = many(values['policies']);
  const manifestPaths = many(values['file']);
  if (policyPaths.length === 0) throw new UsageError(`policy test needs --policies DIR\n${USAGE}`);
  if (manifestPaths.length === 0)
    throw new UsageError(`policy test needs at least one -f MANIFESTS\n${USAGE}`);
  if (manifestPaths.filter((p) => p === '-').length > 1)
    throw new UsageError('-f - (standard input) may be given once');
  const namespace = values['namespace'];

  // Read everything first: unreadable input is a usage error before any evaluation.
  const policyDocs = policyPaths.flatMap(readInput);
  const manifests = manifestPaths.flatMap(readInput);
  const all = [...policyDocs, ...manifests];
  const { set, errors } = compilePolicySet(all.map((d) => d.value));
  if (errors.length > 0)
    throw new UsageError(
      `${errors.length} error${errors.length === 1 ? '' : 's'} in the policies; nothing evaluated:\n${errors
        .map((e) => located(all[e.document]?.file ?? '?', e))
        .join('\n')}`,
    );

  const ctx = policyContext(all.map((d) => d.value));
  const report: PolicyTestReport = {
    allowed: true,
    objects: 0,
    violations: [],
    auditAnnotations: [],
    ignoredErrors: [],
  };
  for (const { file, value } of manifests) {
    if (!isObject(value) || isPolicyDocument(value)) continue;
    report.objects++;
    const verdict: AdmissionVerdict = evaluatePolicies(
      set,
      { object: value, ...(typeof namespace === 'string' ? { namespace } : {}) },
      ctx,
    );
    for (const d of verdict.decisions)
      report.violations.push({
        policy: d.policy,
        binding: d.binding,
        object: verdict.object,
        file,
        action: d.action,
        type: d.type,
        message: d.message,
        reason: d.reason,
        expression: d.expression,
        param: d.param,
      });
    for (const a of verdict.auditAnnotations) report.auditAnnotations.push({ ...a, object: verdict.object });
    for (const e of verdict.ignoredErrors) report.ignoredErrors.push({ ...e, object: verdict.object });
    if (!verdict.allowed) report.allowed = false;
  }
  return report;
}

function refText(r: ObjectRef): string {
  return `${r.kind} ${r.namespace === null ? '' : `${r.namespace}/`}${r.name}`;
}

function table(report: PolicyTestReport): string {
  const lines = report.violations.map(
    (v) =>
      `${v.action.toUpperCase().padEnd(5)}  ${refText(v.object)} (${v.file}): ${v.policy} [${v.binding}]: ${v.message}`,
  );
  for (const e of report.ignoredErrors)
    lines.push(
      `IGNORED  ${refText(e.object)}: ${e.policy} [${e.binding}]: ${e.message} (failurePolicy Ignore)`,
    );
  const denied = new Set(
    report.violations.filter((v) => v.action === 'Deny').map((v) => `${v.file}\u0000${refText(v.object)}`),
  ).size;
  const count = (a: string) => report.violations.filter((v) => v.action === a).length;
  const of = `${report.objects} object${report.objects === 1 ? '' : 's'}`;
  lines.push(
    report.allowed
      ? `allowed: ${of} (${count('Warn')} warning${count('Warn') === 1 ? '' : 's'}, ${count('Audit')} audited)`
      : `denied: ${denied} of ${of} (${count('Deny')} denial${count('Deny') === 1 ? '' : 's'}, ${count('Warn')} warning${count('Warn') === 1 ? '' : 's'}, ${count('Audit')} audited)`,
  );
  return lines.join('\n');
}

const runTest = offlineCommand('policy', USAGE, OPTIONS, (values) => {
  const report = test(values);
  return { results: [report], batch: false, table: () => table(report), failed: !report.allowed };
});

export function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'test') return runTest(rest);
  if (sub === undefined || sub === '--help' || sub === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return Promise.resolve(sub === undefined ? 2 : 0);
  }
  console.error(`flotilla: unknown policy subcommand '${sub}'\n${USAGE}`);
  return Promise.resolve(2);
}

export const describe: CommandDescription = describeOffline(OPTIONS, ['test']);
