import { type IgnoreRuleInput } from '@flotilla/contract';
import picomatch from 'picomatch';
import { DiffError } from './diff-error.js';
import { compileJqPaths, type PathFinder } from './jq-path-expression.js';
import { isPlainObject, parsePointer, resolveSegments, type PathSegment } from './json-pointer.js';

/** An ignore rule checked once and ready to apply to many objects. */
export interface CompiledIgnoreRule {
  rule: IgnoreRuleInput;
  matches: (id: ObjectIdentity) => boolean;
  /** The paths the rule's jsonPointers and jqPathExpressions designate in one object. */
  pathsIn: (obj: unknown) => PathSegment[][];
  managers: readonly string[];
}

export interface ObjectIdentity {
  group: string;
  kind: string;
  name: string;
  namespace: string;
}

/**
 * Checks every rule, whether or not it will match anything: a rule that can never work is an
 * error to report, not a silent no-op. Throws DiffError naming the offending rule field.
 */
export function compileIgnoreRules(rules: readonly IgnoreRuleInput[] = []): CompiledIgnoreRule[] {
  return rules.map((rule, i) => compileRule(rule, `ignoreRules[${i}]`));
}

function compileRule(rule: IgnoreRuleInput, where: string): CompiledIgnoreRule {
  if (typeof rule.kind !== 'string' || rule.kind === '') {
    throw new DiffError('invalid-ignore-rule', 'kind is required', `${where}.kind`);
  }
  const pointers = (rule.jsonPointers ?? []).map((p, j) => {
    const raw = parsePointer(p);
    if (!raw) {
      throw new DiffError(
        'invalid-ignore-rule',
        `'${p}' is not a JSON pointer (RFC 6901): it must start with '/'`,
        `${where}.jsonPointers[${j}]`,
      );
    }
    return raw;
  });
  const finders: PathFinder[] = (rule.jqPathExpressions ?? []).map((e, j) =>
    compileJqPaths(e, `${where}.jqPathExpressions[${j}]`),
  );
  const group = globMatcher(rule.group ?? '');
  const kind = globMatcher(rule.kind);
  return {
    rule,
    managers: rule.managedFieldsManagers ?? [],
    matches: (id) =>
      group(id.group) &&
      kind(id.kind) &&
      (!rule.name || rule.name === id.name) &&
      (!rule.namespace || rule.namespace === id.namespace),
    pathsIn: (obj) => {
      const out: PathSegment[][] = [];
      for (const raw of pointers) {
        const resolved = resolveSegments(obj, raw);
        if (resolved) out.push(resolved);
      }
      for (const find of finders) out.push(...find(obj));
      return out;
    },
  };
}

/** Argo CD matches group and kind as globs (`*` for any), names and namespaces exactly. */
function globMatcher(pattern: string): (value: string) => boolean {
  if (!pattern.includes('*') && !pattern.includes('?')) return (value) => value === pattern;
  const isMatch = picomatch(pattern, { dot: true });
  return (value) => isMatch(value);
}

export function identityOf(...objects: unknown[]): ObjectIdentity {
  const id: ObjectIdentity = { group: '', kind: '', name: '', namespace: '' };
  for (const obj of [...objects].reverse()) {
    if (!isPlainObject(obj)) continue;
    const apiVersion = obj['apiVersion'];
    if (typeof apiVersion === 'string') {
      const slash = apiVersion.indexOf('/');
      id.group = slash < 0 ? '' : apiVersion.slice(0, slash);
    }
    if (typeof obj['kind'] === 'string') id.kind = obj['kind'];
    const metadata = obj['metadata'];
    if (isPlainObject(metadata)) {
      if (typeof metadata['name'] === 'string') id.name = metadata['name'];
      if (typeof metadata['namespace'] === 'string' && metadata['namespace'] !== '') {
        id.namespace = metadata['namespace'];
      }
    }
  }
  return id;
}
