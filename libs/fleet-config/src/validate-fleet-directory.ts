import { checkDocument } from './check-document.js';
import { isInHealthRulesDir } from './health-rules.js';
import { checkReferences, clusterLabelConflicts, type KnownNames } from './check-references.js';
import { formatPath } from './field-path.js';
import { compareFleetErrors, type FleetError } from './fleet-error.js';
import { type FleetKind, type FleetObject } from './fleet-object.js';
import { type Issue } from './issue.js';
import { type ProjectObject } from './kinds/project.js';
import { readYamlDocuments, type YamlDocument } from './yaml-documents.js';

/** One file of a fleet repository; `path` is relative to the repository root, `/`-separated. */
export interface FleetFile {
  path: string;
  content: string;
}

export interface FleetValidation {
  /** The valid objects, in file and document order. */
  objects: FleetObject[];
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
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  for (const file of sorted) {
    const pathProblem = unsafePath(file.path);
    if (pathProblem) {
      errors.push(at(file.path, 0, 1, null, null, { code: 'invalid-path', path: [], message: pathProblem }));
      continue;
    }
    if (!isFleetFile(file.path)) continue;
    const { documents, problems } = readYamlDocuments(file.content);
    for (const p of problems)
      errors.push(
        at(file.path, p.index, p.line, null, null, { code: 'invalid-yaml', path: [], message: p.message }),
      );
    for (const doc of documents) {
      const checked = checkDocument(doc.value);
      const report = (issue: Issue): void => {
        errors.push(
          at(file.path, doc.index, doc.lineOf(issue.path), checked.writtenKind, checked.name, issue),
        );
      };
      checked.issues.forEach(report);
      if (checked.kind === null || checked.name === null) continue;
      const key = `${checked.kind}/${checked.name}`;
      const first = seen.get(key);
      if (first) {
        report({
          code: 'duplicate-name',
          path: ['metadata', 'name'],
          message: `${key} is already defined at ${first.file}:${first.line}; names are unique per kind`,
        });
        continue;
      }
      seen.set(key, { file: file.path, line: doc.lineOf(['metadata', 'name']) });
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
  const objects: FleetObject[] = [];
  for (const { object, doc } of entries) {
    const issues = [
      ...checkReferences(object, known, projects),
      ...(object.kind === 'ClusterGroup' ? (conflicts.get(object.name) ?? []) : []),
    ];
    for (const issue of issues)
      errors.push(at(object.file, object.document, doc.lineOf(issue.path), object.kind, object.name, issue));
    if (issues.length === 0) objects.push(object);
  }
  return { objects, errors: errors.sort(compareFleetErrors) };
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
