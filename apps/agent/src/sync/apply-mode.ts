import {
  type Assignment,
  CLIENT_SIDE_APPLY_FIELD_MANAGER,
  FIELD_MANAGER,
  type KubeObject,
  resourceSyncOptionsOf,
} from '@flotilla/contract';
import { type DriftOptions } from '../drift/drift-differ.js';

/**
 * How one declared object is written, from Argo CD's `Replace`, `Force` and `ServerSideApply` (the
 * object's own annotation first, then the target's syncOptions):
 * - `apply`: server-side apply (the default);
 * - `client-side-apply` (ServerSideApply=false): as `kubectl apply` writes it, a three-way patch with
 *   the last-applied-configuration annotation, created when missing;
 * - `replace` (Replace=true, whatever ServerSideApply says, as in Argo CD): written whole, created
 *   when missing;
 * - `recreate` (Replace=true with Force=true): deleted, then created again, on every sync.
 * `recreateWhenRefused` (Force=true without Replace): an apply the API refuses as invalid (an
 * immutable field changed) deletes the object and creates it again. `validate` (Validate, true unless
 * set false): whether the API server refuses fields the schema does not declare or drops them.
 */
export interface ApplyMode {
  write: 'apply' | 'client-side-apply' | 'replace' | 'recreate';
  recreateWhenRefused: boolean;
  validate: boolean;
}

export function applyModeOf(obj: Pick<KubeObject, 'metadata'>, policy: Assignment['syncPolicy']): ApplyMode {
  const own = resourceSyncOptionsOf(obj);
  const replace = own.replace ?? policy.replace ?? false;
  const force = own.force ?? policy.force ?? false;
  const validate = validatesOf(obj, policy);
  if (replace) return { write: force ? 'recreate' : 'replace', recreateWhenRefused: false, validate };
  const write = serverSideAppliesOf(obj, policy) ? 'apply' : 'client-side-apply';
  return { write, recreateWhenRefused: force, validate };
}

/** Argo CD's `ServerSideApply`: the object's own annotation first, then the target's; true when neither says. */
export function serverSideAppliesOf(
  obj: Pick<KubeObject, 'metadata'>,
  policy: Assignment['syncPolicy'],
): boolean {
  return resourceSyncOptionsOf(obj).serverSideApply ?? policy.serverSideApply ?? true;
}

/**
 * The field manager whose writes say what Flotilla last declared of the object: for drift, whose
 * managedFields (or, client-side, last-applied annotation) show what Git dropped since.
 */
export function fieldManagerOf(obj: Pick<KubeObject, 'metadata'>, policy: Assignment['syncPolicy']): string {
  return applyModeOf(obj, policy).write === 'client-side-apply'
    ? CLIENT_SIDE_APPLY_FIELD_MANAGER
    : FIELD_MANAGER;
}

/** Argo CD's `Validate`: the object's own annotation first, then the target's; true when neither says. */
export function validatesOf(obj: Pick<KubeObject, 'metadata'>, policy: Assignment['syncPolicy']): boolean {
  return resourceSyncOptionsOf(obj).validate ?? policy.validate ?? true;
}

/** What the run says of an object written other than by a plain apply. */
export const WRITE_MESSAGE = {
  replace: 'replaced (Replace=true)',
  recreate: 're-created (Replace=true, Force=true)',
  refused: (why: string) => `re-created (Force=true) after the API refused the change: ${why}`,
} as const;

/** How one declared object of a target is compared with what runs, wherever the agent compares. */
export function driftOptionsOf(desired: KubeObject, assignment: Assignment): DriftOptions {
  return {
    ignoreRules: assignment.ignoreDifferences,
    // ServerSideApply=false: no Apply entry, so the last-applied annotation says what was dropped.
    manager: fieldManagerOf(desired, assignment.syncPolicy),
    unknownFieldsDropped: !validatesOf(desired, assignment.syncPolicy),
  };
}
