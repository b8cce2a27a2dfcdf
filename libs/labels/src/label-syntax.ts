import { z } from 'zod';

/**
 * Kubernetes label syntax (apimachinery's IsQualifiedName / IsValidLabelValue): a key is an optional
 * DNS-1123 subdomain prefix and `/`, then a name of at most 63 characters made of alphanumerics,
 * `-`, `_` and `.`, starting and ending with an alphanumeric; a value is empty or such a name.
 */
const NAME = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const SUBDOMAIN = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';

export const LABEL_KEY_PATTERN = `^(${SUBDOMAIN}/)?${NAME}$`;
export const LABEL_VALUE_PATTERN = `^(${NAME})?$`;
/** Object names: a DNS-1123 subdomain, as for most Kubernetes objects. */
export const OBJECT_NAME_PATTERN = `^${SUBDOMAIN}$`;

const NAME_RE = new RegExp(`^${NAME}$`);
const SUBDOMAIN_RE = new RegExp(`^${SUBDOMAIN}$`);

/** Why `key` is not a valid label key, or null when it is. */
export function labelKeyProblem(key: string): string | null {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? null : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== null) {
    if (prefix.length === 0) return `label key '${key}': the prefix before '/' must not be empty`;
    if (prefix.length > 253) return `label key '${key}': the prefix must be at most 253 characters`;
    if (!SUBDOMAIN_RE.test(prefix))
      return `label key '${key}': the prefix must be a DNS subdomain (lowercase alphanumerics, '-' and '.')`;
  }
  if (name.length === 0) return `label key '${key}': the name part must not be empty`;
  if (name.length > 63) return `label key '${key}': the name part must be at most 63 characters`;
  if (!NAME_RE.test(name))
    return `label key '${key}': the name part must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric`;
  return null;
}

/** Why `value` is not a valid label value, or null when it is. */
export function labelValueProblem(value: string): string | null {
  if (value === '') return null;
  if (value.length > 63) return `label value '${value}' must be at most 63 characters`;
  if (!NAME_RE.test(value))
    return `label value '${value}' must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric`;
  return null;
}

/** A label key, checked with the messages above; the pattern is published in the JSON Schema. */
export const labelKeySchema = z
  .string()
  .superRefine((key, ctx) => {
    const problem = labelKeyProblem(key);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ pattern: LABEL_KEY_PATTERN, description: 'a Kubernetes label key ([prefix/]name)' });

/** A label value (may be empty). */
export const labelValueSchema = z
  .string()
  .superRefine((value, ctx) => {
    const problem = labelValueProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ pattern: LABEL_VALUE_PATTERN, maxLength: 63, description: 'a Kubernetes label value' });

/** Labels as Kubernetes allows them. */
export const labelsSchema = z.record(labelKeySchema, labelValueSchema);
