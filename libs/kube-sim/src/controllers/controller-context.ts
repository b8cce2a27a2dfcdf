import { type ClusterApi, randomSuffix } from '../api/cluster-api.js';
import { StatusError } from '../errors.js';
import { deepEqual, getPath, isObject, type JsonObject, str } from '../json.js';
import { type ResourceType } from '../resources/resource-type.js';

export const CONTROLLER_MANAGER = 'kube-controller-manager';
export const NODE_NAME = 'sim-node-1';

/** Shared helpers for the simulated controllers: typed lookups and idempotent writes. */
export class ControllerContext {
  /** Smallest delay (ms) any controller asked for before its next pass. */
  nextWake: number | undefined;
  /** The controller running now (set by the ControllerManager), so that `wakeIn` knows who asked. */
  current = '';
  /** Controllers that asked for another pass (by `wakeIn`, or by a write that lost a race). */
  readonly woken = new Set<string>();
  private readonly owners = new WeakMap<JsonObject[], Map<unknown, JsonObject[]>>();

  constructor(readonly api: ClusterApi) {}

  rt(group: string, plural: string): ResourceType {
    const version = group === '' || group === 'apps' || group === 'batch' ? 'v1' : 'v1';
    return this.api.rt(group, version, plural);
  }

  nowMs(): number {
    return this.api.clock.now();
  }

  now(): string {
    return this.api.now();
  }

  wakeIn(ms: number): void {
    this.nextWake = this.nextWake === undefined ? ms : Math.min(this.nextWake, ms);
    this.woken.add(this.current);
  }

  /** The store's snapshots, not copies: read them, never change them (build new objects to write). */
  list(group: string, plural: string, namespace?: string): JsonObject[] {
    return this.api.list(this.rt(group, plural), namespace).items;
  }

  /** Objects whose ownerReferences name `owner` (by uid), in the order of `objects`. */
  ownedBy(objects: JsonObject[], owner: JsonObject): JsonObject[] {
    // One index per list (a pass asks about every owner against the same list of pods or ReplicaSets).
    let index = this.owners.get(objects);
    if (!index) {
      index = new Map<unknown, JsonObject[]>();
      for (const o of objects) {
        const refs = getPath(o, ['metadata', 'ownerReferences']);
        if (!Array.isArray(refs)) continue;
        for (const uid of new Set(refs.filter(isObject).map((r) => r['uid'])))
          index.set(uid, [...(index.get(uid) ?? []), o]);
      }
      this.owners.set(objects, index);
    }
    return [...(index.get(getPath(owner, ['metadata', 'uid'])) ?? [])];
  }

  ownerRef(owner: JsonObject, controller = true): JsonObject {
    const m = owner['metadata'] as JsonObject;
    return {
      apiVersion: owner['apiVersion'],
      kind: owner['kind'],
      name: m['name'],
      uid: m['uid'],
      controller,
      blockOwnerDeletion: true,
    };
  }

  /** Writes `.status` (and optionally annotations) through /status, only when something differs. */
  writeStatus(
    rt: ResourceType,
    o: JsonObject,
    status: JsonObject,
    annotations?: Record<string, string>,
  ): JsonObject | undefined {
    const m = o['metadata'] as JsonObject;
    const current = (m['annotations'] ?? {}) as Record<string, string>;
    const nextAnnotations = annotations ? { ...current, ...annotations } : current;
    if (deepEqual(o['status'], status) && deepEqual(current, nextAnnotations)) return undefined;
    const next: JsonObject = {
      ...o,
      status,
      metadata: { ...m, annotations: Object.keys(nextAnnotations).length ? nextAnnotations : undefined },
    };
    return this.guard(() =>
      this.api.update(rt, str(m['namespace'] ?? ''), str(m['name']), next, {
        manager: CONTROLLER_MANAGER,
        subresource: 'status',
      }),
    );
  }

  update(rt: ResourceType, o: JsonObject, manager = CONTROLLER_MANAGER): JsonObject | undefined {
    const m = o['metadata'] as JsonObject;
    return this.guard(() => this.api.update(rt, str(m['namespace'] ?? ''), str(m['name']), o, { manager }));
  }

  create(
    rt: ResourceType,
    namespace: string,
    o: JsonObject,
    manager = CONTROLLER_MANAGER,
  ): JsonObject | undefined {
    return this.guard(() => this.api.create(rt, namespace, o, { manager }));
  }

  delete(
    rt: ResourceType,
    o: JsonObject,
    propagationPolicy: 'Background' | 'Foreground' | 'Orphan' = 'Background',
  ): void {
    const m = o['metadata'] as JsonObject;
    this.guard(() => this.api.delete(rt, str(m['namespace'] ?? ''), str(m['name']), { propagationPolicy }));
  }

  /** Conflicts and races with concurrent writers are retried on the next pass, as real controllers do. */
  private guard<T>(f: () => T): T | undefined {
    try {
      return f();
    } catch (err) {
      if (err instanceof StatusError && [404, 409, 403].includes(err.code)) {
        this.wakeIn(0);
        return undefined;
      }
      throw err;
    }
  }

  suffix(): string {
    return randomSuffix();
  }
}

/** Hashes by template object: a stored snapshot's template never changes, and passes hash it again. */
const hashes = new WeakMap<object, string>();

/**
 * The `pod-template-hash` of a template: FNV-1a, encoded with Kubernetes' safe alphabet. The
 * template must not be changed afterwards (controllers pass the store's immutable snapshots).
 */
export function templateHash(template: unknown): string {
  if (typeof template !== 'object' || template === null) return hashText(JSON.stringify(template ?? {}));
  let h = hashes.get(template);
  if (h === undefined) hashes.set(template, (h = hashText(JSON.stringify(template))));
  return h;
}

function hashText(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return [...String(h)].map((c) => alphabet[c.charCodeAt(0) % alphabet.length]).join('');
}

export function condition(
  previous: unknown,
  type: string,
  status: 'True' | 'False',
  reason: string,
  message: string,
  now: string,
  withUpdateTime: boolean,
  progressed = false,
): JsonObject {
  const prev: unknown = Array.isArray(previous)
    ? (previous as unknown[]).find((c) => isObject(c) && c['type'] === type)
    : undefined;
  const p = isObject(prev) ? prev : undefined;
  const sameStatus = p?.['status'] === status;
  const same = sameStatus && p?.['reason'] === reason && p['message'] === message;
  const c: JsonObject = { type, status };
  if (withUpdateTime) c['lastUpdateTime'] = same && !progressed ? p['lastUpdateTime'] : now;
  c['lastTransitionTime'] = sameStatus && p['lastTransitionTime'] ? p['lastTransitionTime'] : now;
  c['reason'] = reason;
  c['message'] = message;
  return c;
}

export function num(v: unknown, dflt = 0): number {
  return typeof v === 'number' ? v : dflt;
}

/** `25%` of `total`, rounded as Kubernetes does for maxUnavailable (down) or maxSurge (up). */
export function intOrPercent(v: unknown, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.endsWith('%')) {
    const x = (Number(v.slice(0, -1)) * total) / 100;
    return roundUp ? Math.ceil(x) : Math.floor(x);
  }
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return 0;
}
