import {
  type AnyHookPhase,
  DELETE_HOOK_PHASES,
  HOOK_PHASES,
  type KubeObject,
  splitAnnotationList,
} from '@flotilla/contract';

/** The Flotilla alias wins over Argo CD's annotation, as for sync waves. */
export const HOOK_ANNOTATIONS = ['flotilla.dev/hook', 'argocd.argoproj.io/hook'] as const;
export const HOOK_DELETE_POLICY_ANNOTATIONS = [
  'flotilla.dev/hook-delete-policy',
  'argocd.argoproj.io/hook-delete-policy',
] as const;

export const HOOK_DELETE_POLICIES = ['HookSucceeded', 'HookFailed', 'BeforeHookCreation'] as const;
export type HookDeletePolicy = (typeof HOOK_DELETE_POLICIES)[number];

/** Helm's hook annotations, read as Argo CD reads them (gitops-engine pkg/sync/hook/helm). */
export const HELM_HOOK_ANNOTATION = 'helm.sh/hook';
export const HELM_HOOK_DELETE_POLICY_ANNOTATION = 'helm.sh/hook-delete-policy';

/** Any phase a hook may name: the sync phases, and the deletion phases run when its target is deleted. */
const ANY_HOOK_PHASES: readonly AnyHookPhase[] = [...HOOK_PHASES, ...DELETE_HOOK_PHASES];

/**
 * Each Helm hook: the Argo CD phase it runs in, or why it never runs. Argo CD maps the install,
 * upgrade and delete hooks; every other Helm hook is still a hook (never applied as an ordinary
 * object), in no phase.
 */
const HELM_HOOKS: Readonly<Record<string, { phase: AnyHookPhase } | { notRun: string }>> = {
  'pre-install': { phase: 'PreSync' },
  'pre-upgrade': { phase: 'PreSync' },
  'post-install': { phase: 'PostSync' },
  'post-upgrade': { phase: 'PostSync' },
  'pre-delete': { phase: 'PreDelete' },
  'post-delete': { phase: 'PostDelete' },
  'pre-rollback': { notRun: 'Argo CD has no rollback hooks (a rollback runs no hooks)' },
  'post-rollback': { notRun: 'Argo CD has no rollback hooks (a rollback runs no hooks)' },
  test: { notRun: 'Helm test hooks run only under `helm test`, never in a sync' },
  'test-success': { notRun: 'Helm test hooks run only under `helm test`, never in a sync' },
  'test-failure': { notRun: 'Helm test hooks run only under `helm test`, never in a sync' },
};

/** Helm 2's CRD hook: Argo CD treats the object as an ordinary resource (CRDs go first anyway). */
const HELM_CRD_INSTALL = 'crd-install';

const HELM_DELETE_POLICIES: Readonly<Record<string, HookDeletePolicy>> = {
  'before-hook-creation': 'BeforeHookCreation',
  'hook-succeeded': 'HookSucceeded',
  'hook-failed': 'HookFailed',
};

/** How one object takes part in a sync. */
export type SyncRole =
  | { kind: 'resource' }
  /** `Skip`: declared but never applied (nor tracked). */
  | { kind: 'skip' }
  | {
      kind: 'hook';
      /**
       * Empty only for a Helm hook Argo CD has no phase for: then `notRun` says why. A sync runs only
       * the sync phases; PreDelete and PostDelete run when the target is deleted (delete-target.ts).
       */
      phases: AnyHookPhase[];
      deletePolicies: HookDeletePolicy[];
      notRun?: string;
    };

export class HookAnnotationError extends Error {
  readonly code = 'agent-bad-hook';
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
 * ordinary resource. Helm's `helm.sh/hook` counts when no Argo CD hook annotation is there; the
 * delete policies of both are applied. With no delete policy, BeforeHookCreation applies (Argo CD's
 * default).
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
  const where = (key: string): string => `${describe(obj)} metadata.annotations["${key}"]`;
  const hookKey = HOOK_ANNOTATIONS.find((k) => annotations[k] !== undefined);
  const helmHook = annotations[HELM_HOOK_ANNOTATION];
  // Argo CD's own hook annotation wins: Helm's is then not read at all.
  if (!hookKey && (helmHook === undefined || helmHook.trim() === HELM_CRD_INSTALL))
    return { kind: 'resource' };
  const phases: AnyHookPhase[] = [];
  let notRun: string | undefined;
  if (hookKey) {
    const values = splitAnnotationList(annotations[hookKey] ?? '');
    if (values.includes('Skip')) return { kind: 'skip' };
    for (const v of values) {
      if (!(ANY_HOOK_PHASES as readonly string[]).includes(v)) {
        throw new HookAnnotationError(
          where(hookKey),
          `unknown hook ${JSON.stringify(v)}: expected ${[...ANY_HOOK_PHASES, 'Skip'].join(', ')}`,
        );
      }
      if (!phases.includes(v as AnyHookPhase)) phases.push(v as AnyHookPhase);
    }
    if (phases.length === 0) throw new HookAnnotationError(where(hookKey), 'names no hook phase');
  } else {
    const reasons: string[] = [];
    for (const v of splitAnnotationList(helmHook ?? '')) {
      const mapped = HELM_HOOKS[v];
      if (!mapped) {
        throw new HookAnnotationError(
          where(HELM_HOOK_ANNOTATION),
          `unknown Helm hook ${JSON.stringify(v)}: expected ${Object.keys(HELM_HOOKS).join(', ')}`,
        );
      }
      if ('phase' in mapped) {
        if (!phases.includes(mapped.phase)) phases.push(mapped.phase);
      } else reasons.push(`${v}: ${mapped.notRun}`);
    }
    if (phases.length === 0)
      notRun =
        reasons.length > 0
          ? `${HELM_HOOK_ANNOTATION}: ${reasons.join('; ')}`
          : `${HELM_HOOK_ANNOTATION} names no hook`;
  }
  // Argo CD reads both delete policy annotations and applies every policy either names.
  const deletePolicies: HookDeletePolicy[] = [];
  const policyKey = HOOK_DELETE_POLICY_ANNOTATIONS.find((k) => annotations[k] !== undefined);
  for (const v of policyKey ? splitAnnotationList(annotations[policyKey] ?? '') : []) {
    if (!(HOOK_DELETE_POLICIES as readonly string[]).includes(v)) {
      throw new HookAnnotationError(
        where(policyKey ?? ''),
        `unknown hook delete policy ${JSON.stringify(v)}: expected ${HOOK_DELETE_POLICIES.join(', ')}`,
      );
    }
    if (!deletePolicies.includes(v as HookDeletePolicy)) deletePolicies.push(v as HookDeletePolicy);
  }
  for (const v of splitAnnotationList(annotations[HELM_HOOK_DELETE_POLICY_ANNOTATION] ?? '')) {
    const policy = HELM_DELETE_POLICIES[v];
    if (!policy) {
      throw new HookAnnotationError(
        where(HELM_HOOK_DELETE_POLICY_ANNOTATION),
        `unknown Helm hook delete policy ${JSON.stringify(v)}: expected ${Object.keys(HELM_DELETE_POLICIES).join(', ')}`,
      );
    }
    if (!deletePolicies.includes(policy)) deletePolicies.push(policy);
  }
  if (deletePolicies.length === 0) deletePolicies.push('BeforeHookCreation');
  return notRun === undefined
    ? { kind: 'hook', phases, deletePolicies }
    : { kind: 'hook', phases, deletePolicies, notRun };
}

function describe(obj: KubeObject): string {
  const ns = obj.metadata.namespace ? `${obj.metadata.namespace}/` : '';
  return `${obj.kind} ${ns}${obj.metadata.name || (obj.metadata.generateName ?? '')}`;
}
