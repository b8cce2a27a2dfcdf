import { resourceKey, type ResourceType } from '../resources/resource-type.js';
import { getPath, isObject, type JsonObject } from '../json.js';
import { type ControllerContext } from './controller-context.js';
import { isTerminating } from './pods.js';

function rtOf(ctx: ControllerContext, key: string): ResourceType | undefined {
  return ctx.api.registry.all().find((rt) => resourceKey(rt) === key);
}

function refs(o: JsonObject): JsonObject[] {
  const r = getPath(o, ['metadata', 'ownerReferences']);
  return Array.isArray(r) ? r.filter(isObject) : [];
}

/**
 * Garbage collection by ownerReference uid: dependents of vanished owners are deleted
 * (background); owners being deleted in the foreground wait for their dependents; orphaning
 * strips the reference. Namespaces being deleted are emptied, then removed.
 */
export function reconcileLifecycle(ctx: ControllerContext): void {
  const { api } = ctx;
  const entries = [...api.store.entries()].map((e) => ({ resource: e.resource, object: e.object }));
  const uids = new Map<string, { resource: string; object: JsonObject }>();
  for (const e of entries) uids.set(String(getPath(e.object, ['metadata', 'uid'])), e);

  for (const e of entries) {
    const owners = refs(e.object);
    if (owners.length === 0 || isTerminating(e.object)) continue;
    const alive = owners.filter((r) => uids.has(String(r['uid'])));
    if (alive.length === 0) {
      const rt = rtOf(ctx, e.resource);
      if (rt) ctx.delete(rt, e.object, 'Background');
    }
  }

  for (const e of entries) {
    const o = e.object;
    if (!isTerminating(o)) continue;
    const finalizers = (getPath(o, ['metadata', 'finalizers']) ?? []) as string[];
    const rt = rtOf(ctx, e.resource);
    if (!rt) continue;
    const uid = String(getPath(o, ['metadata', 'uid']));
    const dependents = entries.filter((d) => refs(d.object).some((r) => r['uid'] === uid));
    if (finalizers.includes('foregroundDeletion')) {
      if (dependents.length === 0)
        api.removeFinalizer(rt, structuredClone(o), 'foregroundDeletion', 'kube-controller-manager');
      else
        for (const d of dependents) {
          const drt = rtOf(ctx, d.resource);
          if (drt && !isTerminating(d.object)) ctx.delete(drt, d.object, 'Foreground');
        }
    } else if (finalizers.includes('orphan')) {
      for (const d of dependents) {
        const drt = rtOf(ctx, d.resource);
        if (!drt) continue;
        const next = structuredClone(d.object);
        const m = next['metadata'] as JsonObject;
        const rest = refs(next).filter((r) => r['uid'] !== uid);
        if (rest.length) m['ownerReferences'] = rest;
        else delete m['ownerReferences'];
        ctx.update(drt, next);
      }
      api.removeFinalizer(rt, structuredClone(o), 'orphan', 'kube-controller-manager');
    }
    if (rt.kind === 'Namespace' && !rt.custom) finishNamespace(ctx, o, entries);
  }
}

function finishNamespace(
  ctx: ControllerContext,
  ns: JsonObject,
  entries: { resource: string; object: JsonObject }[],
): void {
  const name = String(getPath(ns, ['metadata', 'name']));
  const contents = entries.filter((e) => getPath(e.object, ['metadata', 'namespace']) === name);
  for (const e of contents) {
    const rt = rtOf(ctx, e.resource);
    if (rt?.namespaced && !isTerminating(e.object)) ctx.delete(rt, e.object, 'Background');
  }
  if (contents.length > 0) {
    ctx.wakeIn(0);
    return;
  }
  const nsRt = ctx.rt('', 'namespaces');
  const specFinalizers = (getPath(ns, ['spec', 'finalizers']) ?? []) as string[];
  if (specFinalizers.length) {
    const next = structuredClone(ns);
    (next['spec'] as JsonObject)['finalizers'] = [];
    ctx.update(nsRt, next, 'kube-controller-manager');
    return;
  }
  const metaFinalizers = (getPath(ns, ['metadata', 'finalizers']) ?? []) as string[];
  if (metaFinalizers.length === 0) ctx.api.store.remove(resourceKey(nsRt), '', name);
}

/** PersistentVolumeClaims bind at once; LoadBalancer Services get an ingress IP. */
export function reconcileInfrastructure(ctx: ControllerContext): void {
  const pvcRt = ctx.rt('', 'persistentvolumeclaims');
  for (const pvc of ctx.list('', 'persistentvolumeclaims')) {
    if (getPath(pvc, ['status', 'phase']) === 'Bound' || isTerminating(pvc)) continue;
    const storage = getPath(pvc, ['spec', 'resources', 'requests', 'storage']);
    ctx.writeStatus(pvcRt, pvc, {
      phase: 'Bound',
      accessModes: getPath(pvc, ['spec', 'accessModes']) ?? ['ReadWriteOnce'],
      capacity: storage ? { storage } : {},
    });
  }
  const svcRt = ctx.rt('', 'services');
  let n = 0;
  for (const svc of ctx.list('', 'services')) {
    n++;
    if (getPath(svc, ['spec', 'type']) !== 'LoadBalancer' || isTerminating(svc)) continue;
    const ingress = getPath(svc, ['status', 'loadBalancer', 'ingress']);
    if (Array.isArray(ingress) && ingress.length) continue;
    ctx.writeStatus(svcRt, svc, {
      loadBalancer: { ingress: [{ ip: `172.18.255.${(n % 250) + 1}`, ipMode: 'VIP' }] },
    });
  }
}
