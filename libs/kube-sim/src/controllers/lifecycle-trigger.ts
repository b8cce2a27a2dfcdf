import { getPath, isObject, type JsonObject, str } from '../json.js';
import { type StoreEvent } from '../store/object-store.js';

function ownerUids(o: JsonObject): string[] {
  const refs = getPath(o, ['metadata', 'ownerReferences']);
  return Array.isArray(refs) ? refs.filter(isObject).map((r) => str(r['uid'])) : [];
}

/**
 * Decides from store events alone whether garbage collection and namespace cleanup
 * (`reconcileLifecycle`) may have work, so that a pass skips its walk over every object otherwise.
 * It has work when an object is being deleted (deletionTimestamp: finalizers, namespaces), when an
 * object goes away that others name as owner (their collection) or whose owner waits for it
 * (foreground deletion), or when an object names an owner that does not exist.
 */
export class LifecycleTrigger {
  /** uids of every stored object. */
  private readonly live = new Set<string>();
  /** uids of stored objects with a deletionTimestamp. */
  private readonly terminating = new Set<string>();
  /** Owner uids named by each stored object (by resource and key). */
  private readonly ownersOf = new Map<string, string[]>();
  /** Number of stored objects naming each owner uid. */
  private readonly dependents = new Map<string, number>();

  constructor(objects: Iterable<{ resource: string; object: JsonObject }>) {
    for (const { resource, object } of objects) {
      const m = (object['metadata'] ?? {}) as JsonObject;
      this.track(`${resource}|${str(m['namespace'] ?? '')}/${str(m['name'])}`, object);
    }
  }

  /** Records the event; true when the lifecycle controller should run on the next pass. */
  observe(e: StoreEvent): boolean {
    const key = `${e.resource}|${e.namespace}/${e.name}`;
    const uid = str(getPath(e.object, ['metadata', 'uid']) ?? '');
    if (e.type === 'DELETED') {
      const owners = this.ownersOf.get(key) ?? [];
      this.setOwners(key, []);
      this.live.delete(uid);
      this.terminating.delete(uid);
      return (this.dependents.get(uid) ?? 0) > 0 || owners.some((o) => this.terminating.has(o));
    }
    const { owners, deleting } = this.track(key, e.object);
    return deleting || owners.some((o) => !this.live.has(o));
  }

  private track(key: string, o: JsonObject): { owners: string[]; deleting: boolean } {
    const uid = str(getPath(o, ['metadata', 'uid']) ?? '');
    const owners = ownerUids(o);
    this.setOwners(key, owners);
    this.live.add(uid);
    const deleting = getPath(o, ['metadata', 'deletionTimestamp']) !== undefined;
    if (deleting) this.terminating.add(uid);
    else this.terminating.delete(uid);
    return { owners, deleting };
  }

  private setOwners(key: string, owners: string[]): void {
    for (const o of this.ownersOf.get(key) ?? []) {
      const n = (this.dependents.get(o) ?? 1) - 1;
      if (n > 0) this.dependents.set(o, n);
      else this.dependents.delete(o);
    }
    if (owners.length === 0) {
      this.ownersOf.delete(key);
      return;
    }
    this.ownersOf.set(key, owners);
    for (const o of owners) this.dependents.set(o, (this.dependents.get(o) ?? 0) + 1);
  }
}
