import { APPLICATIONSET_API_VERSIONS } from '@flotilla/generators';
import { validateWindows, WindowError } from '@flotilla/windows';
import { type z } from 'zod';
import { parsePath } from './field-path.js';
import { type FleetErrorCode } from './fleet-error.js';
import { FLEET_KINDS, type FleetKind, type ParsedFleetObject } from './fleet-object.js';
import { fromZodIssues, type Issue } from './issue.js';
import { checkApplicationSet } from './kinds/application-set.js';
import { clusterGroupObjectSchema } from './kinds/cluster-group.js';
import { FLOTILLA_API_VERSION } from './kinds/common.js';
import { notificationPolicyObjectSchema } from './kinds/notification-policy.js';
import { projectObjectSchema } from './kinds/project.js';
import { rolloutStrategyObjectSchema } from './kinds/rollout-strategy.js';
import { sourceVerificationObjectSchema } from './kinds/source-verification.js';
import { syncWindowObjectSchema, type SyncWindowObject } from './kinds/sync-window.js';

type Parsed = ParsedFleetObject;

export interface CheckedDocument {
  /** The kind when it is one of ours (even if the object is invalid), else null. */
  kind: FleetKind | null;
  /** The kind as written (for messages), even when it is not one of ours. */
  writtenKind: string | null;
  name: string | null;
  parsed: Parsed | null;
  issues: Issue[];
}

/** Dispatches one YAML document to its kind's schema and returns every problem found in it. */
export function checkDocument(value: unknown): CheckedDocument {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      kind: null,
      writtenKind: null,
      name: null,
      parsed: null,
      issues: [
        {
          code: 'not-an-object',
          path: [],
          message: `expected a Kubernetes-style object with apiVersion, kind, metadata and spec, got ${Array.isArray(value) ? 'a list' : typeof value}`,
        },
      ],
    };
  }
  const doc = value as Record<string, unknown>;
  const metadata = doc['metadata'];
  const rawName =
    typeof metadata === 'object' && metadata !== null
      ? (metadata as Record<string, unknown>)['name']
      : undefined;
  const name = typeof rawName === 'string' ? rawName : null;
  const writtenKind = typeof doc['kind'] === 'string' && doc['kind'] !== '' ? doc['kind'] : null;
  const kindProblem = kindIssue(doc['apiVersion'], doc['kind']);
  if (kindProblem) return { kind: null, writtenKind, name, parsed: null, issues: [kindProblem] };
  const kind = doc['kind'] as FleetKind;
  const result = (p: Parsed | null, issues: Issue[]): CheckedDocument => ({
    kind,
    writtenKind,
    name,
    parsed: p,
    issues,
  });
  switch (kind) {
    case 'ApplicationSet': {
      const r = checkApplicationSet(doc);
      return result(r.object && { kind, object: r.object }, r.issues);
    }
    case 'ClusterGroup':
      return viaSchema(clusterGroupObjectSchema, doc, (object) => result({ kind, object }, []), result);
    case 'Project':
      return viaSchema(projectObjectSchema, doc, (object) => result({ kind, object }, []), result);
    case 'RolloutStrategy':
      return viaSchema(rolloutStrategyObjectSchema, doc, (object) => result({ kind, object }, []), result);
    case 'SourceVerification':
      return viaSchema(sourceVerificationObjectSchema, doc, (object) => result({ kind, object }, []), result);
    case 'NotificationPolicy':
      // Templates are rendered against a sample message here, so a bad one fails `flotilla validate`.
      return viaSchema(notificationPolicyObjectSchema, doc, (object) => result({ kind, object }, []), result);
    case 'SyncWindow':
      return viaSchema(
        syncWindowObjectSchema,
        doc,
        (object) => {
          const issues = windowIssues(object);
          return result(issues.length === 0 ? { kind, object } : null, issues);
        },
        result,
      );
  }
}

function viaSchema<S extends z.ZodType>(
  schema: S,
  doc: unknown,
  ok: (object: z.infer<S>) => CheckedDocument,
  fail: (p: null, issues: Issue[]) => CheckedDocument,
): CheckedDocument {
  const r = schema.safeParse(doc, { reportInput: true });
  return r.success ? ok(r.data) : fail(null, fromZodIssues(r.error.issues));
}

/** Cron, duration and time zone are checked by the same code that evaluates windows. */
function windowIssues(object: SyncWindowObject): Issue[] {
  const { projects: _projects, ...window } = object.spec;
  try {
    validateWindows([window]);
    return [];
  } catch (err) {
    if (!(err instanceof WindowError)) throw err;
    const codes: Partial<Record<WindowError['code'], FleetErrorCode>> = {
      'invalid-schedule': 'invalid-schedule',
      'invalid-duration': 'invalid-duration',
      'invalid-time-zone': 'invalid-time-zone',
    };
    // The window's index means nothing here (one window per object): keep only the field.
    const field = parsePath(err.path).slice(1);
    const message = err.message.replace(/^sync window \d+ \([^)]*\): /, '');
    return [{ code: codes[err.code] ?? 'invalid-field', path: ['spec', ...field], message }];
  }
}

const ARGO_API_VERSION = 'argoproj.io/v1alpha1';

function kindIssue(apiVersion: unknown, kind: unknown): Issue | null {
  const ours = `${FLOTILLA_API_VERSION} (${FLEET_KINDS.join(', ')}) or ${ARGO_API_VERSION} (ApplicationSet)`;
  if (typeof apiVersion !== 'string' || apiVersion === '')
    return {
      code: 'unknown-api-version',
      path: ['apiVersion'],
      message: `apiVersion is missing: expected ${ours}`,
    };
  if (typeof kind !== 'string' || kind === '')
    return { code: 'unknown-kind', path: ['kind'], message: `kind is missing: expected ${ours}` };
  if (apiVersion === ARGO_API_VERSION) {
    if (kind === 'ApplicationSet') return null;
    const hint = kind === 'AppProject' ? `; write a ${FLOTILLA_API_VERSION} Project instead` : '';
    return {
      code: 'unknown-kind',
      path: ['kind'],
      message: `${ARGO_API_VERSION} ${kind} is not read from a fleet repository: only ApplicationSet is accepted from Argo CD${hint}`,
    };
  }
  if (apiVersion !== FLOTILLA_API_VERSION) {
    const known = (APPLICATIONSET_API_VERSIONS as readonly string[]).join(', ');
    return {
      code: 'unknown-api-version',
      path: ['apiVersion'],
      message: `unknown apiVersion '${apiVersion}': a fleet repository holds ${known} objects`,
    };
  }
  if (!(FLEET_KINDS as readonly string[]).includes(kind))
    return {
      code: 'unknown-kind',
      path: ['kind'],
      message: `unknown kind '${kind}' in ${FLOTILLA_API_VERSION}: expected one of ${FLEET_KINDS.join(', ')}`,
    };
  return null;
}
