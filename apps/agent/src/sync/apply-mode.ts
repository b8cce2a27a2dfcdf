import { type Assignment, type KubeObject, resourceSyncOptionsOf } from '@flotilla/contract';

/**
 * How one declared object is written, from Argo CD's `Replace` and `Force` (the object's own
 * annotation first, then the target's syncOptions):
 * - `apply`: server-side apply (the default);
 * - `replace` (Replace=true): written whole, created when missing;
 * - `recreate` (Replace=true with Force=true): deleted, then created again, on every sync.
 * `recreateWhenRefused` (Force=true without Replace): an apply the API refuses as invalid (an
 * immutable field changed) deletes the object and creates it again. `validate` (Validate, true unless
 * set false): whether the API server refuses fields the schema does not declare or drops them.
 */
export interface ApplyMode {
  write: 'apply' | 'replace' | 'recreate';
  recreateWhenRefused: boolean;
  validate: boolean;
}

export function applyModeOf(obj: Pick<KubeObject, 'metadata'>, policy: Assignment['syncPolicy']): ApplyMode {
  const own = resourceSyncOptionsOf(obj);
  const replace = own.replace ?? policy.replace ?? false;
  const force = own.force ?? policy.force ?? false;
  const validate = validatesOf(obj, policy);
  if (replace) return { write: force ? 'recreate' : 'replace', recreateWhenRefused: false, validate };
  return { write: 'apply', recreateWhenRefused: force, validate };
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
