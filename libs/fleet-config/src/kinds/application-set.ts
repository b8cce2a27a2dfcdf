import {
  applicationSetObjectSchema,
  GeneratorError,
  parseApplicationSet,
  type ApplicationSet,
  type ApplicationSetObject,
} from '@flotilla/generators';
import { anyValueSelectorSchema } from '@flotilla/labels';
import { parsePath } from '../field-path.js';
import { fromZodIssues, type Issue } from '../issue.js';

/** Checks an ApplicationSet document; every problem found is returned, not only the first. */
export function checkApplicationSet(value: unknown): {
  object: ApplicationSetObject | null;
  issues: Issue[];
} {
  const issues: Issue[] = [];
  const envelope = applicationSetObjectSchema.safeParse(value, { reportInput: true });
  if (!envelope.success) issues.push(...fromZodIssues(envelope.error.issues));
  let parsed: ApplicationSet | null = null;
  try {
    parsed = parseApplicationSet(value);
  } catch (err) {
    if (!(err instanceof GeneratorError)) throw err;
    const path = parsePath(err.path);
    // The envelope already reported problems at the same place in its own words.
    if (!issues.some((i) => samePath(i.path, path))) {
      issues.push({
        code: err.code === 'invalid-selector' ? 'invalid-selector' : 'invalid-field',
        path,
        message: err.detail,
      });
    }
  }
  if (envelope.success)
    issues.push(...checkGeneratorSelectors(envelope.data.spec.generators, ['spec', 'generators']));
  if (!envelope.success || parsed === null || issues.length > 0) return { object: null, issues };
  const { project, rolloutStrategy } = envelope.data.spec;
  return {
    object: {
      apiVersion: envelope.data.apiVersion,
      kind: 'ApplicationSet',
      metadata: envelope.data.metadata,
      spec: {
        ...parsed.spec,
        ...(project !== undefined && { project }),
        ...(rolloutStrategy !== undefined && { rolloutStrategy }),
      },
    },
    issues,
  };
}

/**
 * The generators lib checks selector operators only when it evaluates them; a fleet repository
 * wants them checked at review time. Values are not held to label syntax here: Argo CD lets a
 * clusters selector match the server URL.
 */
function checkGeneratorSelectors(generators: unknown[], base: (string | number)[]): Issue[] {
  const issues: Issue[] = [];
  generators.forEach((g, i) => {
    if (typeof g !== 'object' || g === null) return;
    const gen = g as Record<string, unknown>;
    const at = [...base, i];
    if (gen['selector'] != null) issues.push(...checkSelector(gen['selector'], [...at, 'selector']));
    const clusters = gen['clusters'] as Record<string, unknown> | null | undefined;
    if (clusters != null && clusters['selector'] != null)
      issues.push(...checkSelector(clusters['selector'], [...at, 'clusters', 'selector']));
    for (const nested of ['matrix', 'merge'] as const) {
      const children = (gen[nested] as { generators?: unknown } | null | undefined)?.generators;
      if (Array.isArray(children))
        issues.push(...checkGeneratorSelectors(children, [...at, nested, 'generators']));
    }
  });
  return issues;
}

function checkSelector(selector: unknown, path: (string | number)[]): Issue[] {
  const r = anyValueSelectorSchema.safeParse(selector, { reportInput: true });
  return r.success
    ? []
    : fromZodIssues(r.error.issues, path).map((i) => ({ ...i, code: 'invalid-selector' }));
}

function samePath(a: (string | number)[], b: (string | number)[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
