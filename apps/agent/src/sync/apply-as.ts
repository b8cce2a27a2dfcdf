import { isDeepStrictEqual } from 'node:util';
import { FIELD_MANAGER, type KubeObject } from '@flotilla/contract';
import { LAST_APPLIED_ANNOTATION, withLastApplied } from '@flotilla/diff';
import { type KubeClient } from '../kube/kube-client.js';
import { type ApplyMode } from './apply-mode.js';

/**
 * One apply as the object's mode says: client-side from `live` (what the cluster has; undefined:
 * create) with ServerSideApply=false, else server-side (also for a hook with Replace=true: hooks are
 * applied, never replaced).
 */
export function applyAs(
  kube: KubeClient,
  mode: ApplyMode,
  obj: KubeObject,
  live: KubeObject | undefined,
  dryRun?: boolean,
): Promise<KubeObject> {
  const options = { validate: mode.validate, ...(dryRun ? { dryRun } : {}) };
  return mode.write === 'client-side-apply'
    ? kube.clientSideApply(obj, live, options)
    : kube.apply(obj, options);
}

/**
 * True when an apply changed nothing this agent is responsible for: appliedNothing for a server-side
 * apply; for a client-side one, the values at every path the new or the previous last-applied
 * configuration names (the annotation itself included), so a removal counts and a controller's
 * status write between our read and our patch does not.
 */
export function wroteNothing(
  mode: ApplyMode,
  before: KubeObject,
  after: KubeObject,
  applied: KubeObject,
): boolean {
  if (mode.write !== 'client-side-apply') return appliedNothing(before, after, applied);
  const shapes = [withLastApplied(applied), lastAppliedOf(before) ?? {}];
  return shapes.every((shape) => isDeepStrictEqual(projectOnto(before, shape), projectOnto(after, shape)));
}

/** The previous client-side apply's configuration, from the object's annotation. */
function lastAppliedOf(obj: KubeObject): unknown {
  const text = obj.metadata.annotations?.[LAST_APPLIED_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * True when an apply changed nothing this agent is responsible for. resourceVersion cannot tell:
 * a controller writing status (or its own annotation) between our read and our apply moves it. So
 * compare only what the apply could have changed: the values at the paths the applied object sets,
 * before and after, and this manager's own managedFields entry (its field set, and its time, which
 * the server moves when the apply changes a value it owns).
 */
export function appliedNothing(before: KubeObject, after: KubeObject, applied: KubeObject): boolean {
  return (
    isDeepStrictEqual(ownEntry(before), ownEntry(after)) &&
    isDeepStrictEqual(projectOnto(before, applied), projectOnto(after, applied))
  );
}

function ownEntry(obj: KubeObject): unknown {
  const entries = (obj.metadata as { managedFields?: Record<string, unknown>[] }).managedFields ?? [];
  const own = entries.find(
    (e) => e['manager'] === FIELD_MANAGER && e['operation'] === 'Apply' && !e['subresource'],
  );
  return own ? { fieldsV1: own['fieldsV1'], time: own['time'], apiVersion: own['apiVersion'] } : undefined;
}

/**
 * The parts of `live` at the keys `shape` has, recursively through objects; a list or a scalar is
 * taken whole (list items carry server defaults, but the same ones before and after).
 */
function projectOnto(live: unknown, shape: unknown): unknown {
  if (!isRecord(shape) || !isRecord(live)) return live;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(shape)) out[key] = projectOnto(live[key], shape[key]);
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
