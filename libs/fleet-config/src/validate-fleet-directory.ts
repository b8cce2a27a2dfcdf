import { checkDocument } from './check-document.js';
import { isInHealthRulesDir } from './health-rules.js';
import {
  checkReferences,
  clusterLabelConflicts,
  repositoryVerificationConflicts,
  type KnownNames,
} from './check-references.js';
import { formatPath } from './field-path.js';
import { compareFleetErrors, type FleetError } from './fleet-error.js';
import { type FleetFile } from './fleet-file.js';
import { type FleetKind, type FleetObject, type FleetObjectSource } from './fleet-object.js';
import { isPolicyDocument, type KubeObject } from '@flotilla/policy';
import { type Issue } from './issue.js';
import { checkPolicyDocument, type ParsedFleetPolicy } from './kinds/admission-policy.js';
import { type ProjectObject } from './kinds/project.js';
import { readYamlDocuments, type YamlDocument } from './yaml-documents.js';

/** A valid ValidatingAdmissionPolicy or binding of the repository, located. */
export type FleetPolicy = FleetObjectSource & ParsedFleetPolicy;

/** An object a policy takes as params (its paramKind), kept as written. */
export interface FleetPolicyParam extends FleetObjectSource {
  object: KubeObject;
}

export interface FleetValidation {
  /** The valid objects, in file and document order. */
  objects: FleetObject[];
  /**
   * The valid admission policies and bindings (Kubernetes' own kinds, kept apart from Flotilla's),
   * in file and document order, for the hub to check bundles against.
   */
  policies: FleetPolicy[];
  /** Objects of a kind some policy names as its paramKind (ConfigMaps, usually). */
  params: FleetPolicyParam[];
  /** Every problem, sorted by file, document and line. Any error makes the whole set invalid. */
  errors: FleetError[];
}

/**
 * Whether a file belongs to the fleet configuration: YAML, outside hidden directories (.github, .git)
 * and outside resource_customizations (health rules, whose Argo CD test data is YAML too).
 */
export function isFleetFile(path: string): boolean {
  return (
    /\.ya?ml$/i.test(path) &&
    !path.split('/').some((segment) => segment.startsWith('.')) &&
    !isInHealthRulesDir(path)
  );
}

/**
 * Validates a fleet repository as a whole: every YAML document against its kind, then the references
 * between objects. Pure: the caller reads the files (from a checkout or a git tree). A set with any
 * error is invalid as a whole, so a caller applies `objects` only when `errors` is empty.
 */
export function validateFleetDirectory(files: readonly FleetFile[]): FleetValidation {
  const errors: FleetError[] = [];
  const entries: { object: FleetObject; doc: YamlDocument }[] = [];
  const seen = new Map<string, { file: string; line: number }>();
  const known: KnownNames = new Map();
  const policyNames = new Set<string>();
  const policyEntries: { policy: FleetPolicy; doc: YamlDocument }[] = [];
  const params: FleetPolicyParam[] = [];
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  /**
   * Records `kind/name` as defined by this document, Flotilla's kinds and policies alike; when an
   * earlier document defined it, reports the duplicate instead and returns false.
   */
  const claimName = (
    kind: string,
    name: string,
    file: string,
    doc: YamlDocument,
    report: (issue: Issue) => void,
  ): boolean => {
    const key = `${kind}/${name}`;
    const first = seen.get(key);
    if (first) {
      report({
        code: 'duplicate-name',
        path: ['metadata', 'name'],
        message: `${key} is already defined at ${first.file}:${first.line}; names are unique per kind`,
      });
      return false;
    }
    seen.set(key, { file, line: doc.lineOf(['metadata', 'name']) });
    return true;
  };

  const read: { file: FleetFile; documents: YamlDocument[] }[] = [];
  for (const file of sorted) {
    const pathProblem = unsafePath(file.path);
    if (pathProblem) {
      errors.push(at(file.path, 0, 1, null, null, { code: 'invalid-path', path: [], message: pathProblem }));
      continue;
    }
    if (!isFleetFile(file.path)) continue;
    const { documents, problems } = readYamlDocuments(file.content);
    for (const p of problems)
      errors.push({
        ...at(file.path, p.index, p.line, null, null, { code: 'invalid-yaml', path: [], message: p.message }),
        ...(p.excerpt && { excerpt: p.excerpt }),
      });
    read.push({ file, documents });
  }
  // A policy's paramKind makes objects of that kind (ConfigMaps, usually) welcome beside it.
  const paramKinds = new Set(read.flatMap(({ documents }) => documents.flatMap((d) => paramKindOf(d.value))));

  for (const { file, documents } of read) {
    for (const doc of documents) {
      const paramKind = kindKey(doc.value);
      if (paramKind !== null && paramKinds.has(paramKind)) {
        const rawName = (doc.value as { metadata?: { name?: unknown } }).metadata?.name;
        if (typeof rawName === 'string' && rawName !== '')
          params.push({
            name: rawName,
            file: file.path,
            document: doc.index,
            line: doc.line,
            object: doc.value as KubeObject,
          });
        else
          errors.push(
            at(
              file.path,
              doc.index,
              doc.lineOf(['metadata', 'name']),
              (doc.value as { kind: string }).kind,
              null,
              {
                code: 'invalid-field',
                path: ['metadata', 'name'],
                message: 'required field is missing (expected string)',
              },
            ),
          );
        continue;
      }
      if (isPolicyDocument(doc.value)) {
        const value = doc.value as Record<string, unknown>;
        const kind = value['kind'] as ParsedFleetPolicy['kind'];
        const rawName = (value['metadata'] as { name?: unknown } | undefined)?.name;
        const name = typeof rawName === 'string' ? rawName : null;
        const { parsed, issues } = checkPolicyDocument(value);
        const report = (issue: Issue): void => {
          errors.push(at(file.path, doc.index, doc.lineOf(issue.path), kind, name, issue));
        };
        issues.forEach(report);
        if (name === null || !claimName(kind, name, file.path, doc, report)) continue;
        if (kind === 'ValidatingAdmissionPolicy') policyNames.add(name);
        if (parsed)
          policyEntries.push({
            policy: { name, file: file.path, document: doc.index, line: doc.line, ...parsed },
            doc,
          });
        continue;
      }
      const checked = checkDocument(doc.value);
      const report = (issue: Issue): void => {
        errors.push(
          at(file.path, doc.index, doc.lineOf(issue.path), checked.writtenKind, checked.name, issue),
        );
      };
      checked.issues.forEach(report);
      if (
        checked.kind === null ||
        checked.name === null ||
        !claimName(checked.kind, checked.name, file.path, doc, report)
      )
        continue;
      addKnown(known, checked.kind, checked.name);
      if (checked.parsed) {
        const source = { name: checked.name, file: file.path, document: doc.index, line: doc.line };
        entries.push({ object: { ...source, ...checked.parsed }, doc });
      }
    }
  }

  const projects = new Map<string, ProjectObject>();
  for (const { object } of entries) if (object.kind === 'Project') projects.set(object.name, object.object);
  const conflicts = clusterLabelConflicts(
    entries.flatMap(({ object: o }) => (o.kind === 'ClusterGroup' ? [o] : [])),
  );
  const verifications = repositoryVerificationConflicts(
    entries.flatMap(({ object: o }) => (o.kind === 'SourceVerification' ? [o] : [])),
  );
  const objects: FleetObject[] = [];
  for (const { object, doc } of entries) {
    const issues = [
      ...checkReferences(object, known, projects),
      ...(object.kind === 'ClusterGroup' ? (conflicts.get(object.name) ?? []) : []),
      ...(object.kind === 'SourceVerification' ? (verifications.get(object.name) ?? []) : []),
    ];
    for (const issue of issues)
      errors.push(at(object.file, object.document, doc.lineOf(issue.path), object.kind, object.name, issue));
    if (issues.length === 0) objects.push(object);
  }
  const policies: FleetPolicy[] = [];
  for (const { policy, doc } of policyEntries) {
    if (
      policy.kind === 'ValidatingAdmissionPolicyBinding' &&
      !policyNames.has(policy.object.spec.policyName)
    ) {
      const issue: Issue = {
        code: 'dangling-reference',
        path: ['spec', 'policyName'],
        message: `policy '${policy.object.spec.policyName}' does not exist: no ValidatingAdmissionPolicy of that name in the repository`,
      };
      errors.push(at(policy.file, policy.document, doc.lineOf(issue.path), policy.kind, policy.name, issue));
      continue;
    }
    policies.push(policy);
  }
  return { objects, policies, params, errors: errors.sort(compareFleetErrors) };
}

function kindKey(value: unknown): string | null {
  const v = value as { apiVersion?: unknown; kind?: unknown } | null;
  return typeof v === 'object' && v !== null && typeof v.apiVersion === 'string' && typeof v.kind === 'string'
    ? `${v.apiVersion}/${v.kind}`
    : null;
}

function paramKindOf(value: unknown): string[] {
  if (!isPolicyDocument(value)) return [];
  const paramKind = (value as { spec?: { paramKind?: unknown } }).spec?.paramKind;
  const key = kindKey(paramKind);
  // A params kind never makes Flotilla's own kinds or policies themselves into params.
  return key === null || isPolicyDocument(paramKind) || key.startsWith('flotilla.dev/') ? [] : [key];
}

function addKnown(known: KnownNames, kind: FleetKind, name: string): void {
  let names = known.get(kind);
  if (!names) known.set(kind, (names = new Set()));
  names.add(name);
}

function at(
  file: string,
  document: number,
  line: number,
  kind: string | null,
  name: string | null,
  issue: Issue,
): FleetError {
  return {
    code: issue.code,
    file,
    document,
    line,
    kind,
    name,
    path: formatPath(issue.path),
    message: issue.message,
  };
}

/** Paths come from a checkout or a git tree; one that could leave the repository is refused outright. */
function unsafePath(path: string): string | null {
  if (path === '') return 'empty file path';
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path))
    return `absolute path '${path}': paths are relative to the repository root`;
  if (path.includes('\\')) return `path '${path}' uses '\\': use '/' separators`;
  if (path.split('/').some((s) => s === '..' || s === ''))
    return `path '${path}' escapes or is not normalised ('..' or '//')`;
  return null;
}
