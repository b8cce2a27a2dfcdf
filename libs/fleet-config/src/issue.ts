import { type z } from 'zod';
import { type FleetErrorCode } from './fleet-error.js';

/** A problem inside one document, before it is given its file, document and line. */
export interface Issue {
  code: FleetErrorCode;
  path: (string | number)[];
  message: string;
}

const SELECTOR_FIELDS = new Set(['matchLabels', 'matchExpressions']);

/** zod's issues as Issues: paths kept, messages a person can act on, one issue per unknown field. */
export function fromZodIssues(issues: readonly z.core.$ZodIssue[], base: (string | number)[] = []): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const path = [...base, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))];
    const params = (issue as { params?: { code?: FleetErrorCode } }).params;
    const code: FleetErrorCode =
      params?.code ??
      (path.some((p) => typeof p === 'string' && SELECTOR_FIELDS.has(p))
        ? 'invalid-selector'
        : 'invalid-field');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        out.push({ code, path: [...path, key], message: `unknown field '${key}'` });
    } else if (issue.code === 'invalid_key') {
      out.push({ code, path, message: issue.issues[0]?.message ?? issue.message });
    } else if (issue.code === 'invalid_type' && 'input' in issue && issue.input === undefined) {
      out.push({ code, path, message: `required field is missing (expected ${issue.expected})` });
    } else {
      out.push({ code, path, message: issue.message });
    }
  }
  return out;
}
