import { HOOK_PHASES, type HookPhase, type KubeObject, splitAnnotationList } from '@flotilla/contract';

/** The Flotilla alias wins over Argo CD's annotation, as for sync waves. */
export const HOOK_ANNOTATIONS = ['flotilla.dev/hook', 'argocd.argoproj.io/hook'] as const;
export const HOOK_DELETE_POLICY_ANNOTATIONS = [
  'flotilla.dev/hook-delete-policy',
  'argocd.argoproj.io/hook-delete-policy',
] as const;

export const HOOK_DELETE_POLICIES = ['HookSucceeded', 'HookFailed', 'BeforeHookCreation'] as const;
export type HookDeletePolicy = (typeof HOOK_DELETE_POLICIES)[number];

/** How one object takes part in a sync. */
export type SyncRole =
  | { kind: 'resource' }
  /** `Skip`: declared but never applied (nor tracked). */
  | { kind: 'skip' }
  | { kind: 'hook'; phases: HookPhase[]; deletePolicies: HookDeletePolicy[] };

export class HookAnnotationError extends Error {
  readonly code = 'AGENT_BAD_HOOK';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'HookAnnotationError';
  }
}

/**
 * Reads the hook annotations of one manifest. Values are comma-separated as in Argo CD; an unknown
 * phase or delete policy is an error naming the annotation, so a typo never turns a hook into an
 * ordinary resource. With no delete policy, BeforeHookCreation applies (Argo CD's default).
 */
export function syncRoleOf(obj: KubeObject): SyncRole {
  const role = readRole(obj);
  // Server-side apply needs a name, and an object made afresh on every run could never be tracked,
  // compared or pruned: only a hook, created anew by design, may leave its name to the server.
  if (role.kind === 'resource' && obj.metadata.name === '')
    throw new HookAnnotationError(
      `${describe(obj)} metadata.generateName`,
      'only a hook may be named by generateName (its name is made fresh on every run); give this object a metadata.name',
    );
  return role;
}

function readRole(obj: KubeObject): SyncRole {
  const annotations = obj.metadata.annotations ?? {};
  const hookKey = HOOK_ANNOTATIONS.find((k) => annotations[k] !== undefined);
  if (!hookKey) return { kind: 'resource' };
  const where = (key: string): string => `${describe(obj)} metadata.annotations["${key}"]`;
  const values = splitAnnotationList(annotations[hookKey] ?? '');
  if (values.includes('Skip')) return { kind: 'skip' };
  const phases: HookPhase[] = [];
  for (const v of values) {
    if (!(HOOK_PHASES as readonly string[]).includes(v)) {
      throw new HookAnnotationError(
        where(hookKey),
        `unknown hook ${JSON.stringify(v)}: expected ${[...HOOK_PHASES, 'Skip'].join(', ')}` +
          (v === 'PreDelete' || v === 'PostDelete' ? ' (deletion hooks are not supported)' : ''),
      );
    }
    if (!phases.includes(v as HookPhase)) phases.push(v as HookPhase);
  }
  if (phases.length === 0) throw new HookAnnotationError(where(hookKey), 'names no hook phase');
  const policyKey = HOOK_DELETE_POLICY_ANNOTATIONS.find((k) => annotations[k] !== undefined);
  const deletePolicies: HookDeletePolicy[] = [];
  for (const v of policyKey ? splitAnnotationList(annotations[policyKey] ?? '') : []) {
    if (!(HOOK_DELETE_POLICIES as readonly string[]).includes(v)) {
      throw new HookAnnotationError(
        where(policyKey ?? ''),
        `unknown hook delete policy ${JSON.stringify(v)}: expected ${HOOK_DELETE_POLICIES.join(', ')}`,
      );
    }
    deletePolicies.push(v as HookDeletePolicy);
  }
  if (deletePolicies.length === 0) deletePolicies.push('BeforeHookCreation');
  return { kind: 'hook', phases, deletePolicies };
}

function describe(obj: KubeObject): string {
  const ns = obj.metadata.namespace ? `${obj.metadata.namespace}/` : '';
  return `${obj.kind} ${ns}${obj.metadata.name || (obj.metadata.generateName ?? '')}`;
}
