import { type ClusterApi } from '../api/cluster-api.js';
import { getPath, isObject, type JsonObject } from '../json.js';
import { type ResourceType } from '../resources/resource-type.js';
import { type ControllerContext } from './controller-context.js';

/** Switches for writers other than the GitOps agent, so drift-noise handling can be tested for real. */
export interface OtherWriters {
  /** A simulated autoscaler: sets `spec.replicas` of every Deployment to `replicas` (manager `sim-autoscaler`, via /scale). */
  autoscaler?: { replicas: number; namespace?: string };
  /** A simulated mutating webhook on Deployments: injects an annotation and, optionally, a sidecar container. */
  webhook?: { annotation?: [string, string]; sidecar?: { name: string; image: string } };
}

export const AUTOSCALER_MANAGER = 'sim-autoscaler';

/** The simulated autoscaler: moves spec.replicas through /scale under its own field manager. */
export function reconcileAutoscaler(ctx: ControllerContext, writers: OtherWriters): void {
  const a = writers.autoscaler;
  if (!a) return;
  const rt = ctx.rt('apps', 'deployments');
  for (const d of ctx.list('apps', 'deployments', a.namespace)) {
    if (
      getPath(d, ['spec', 'replicas']) === a.replicas ||
      getPath(d, ['metadata', 'deletionTimestamp']) !== undefined
    )
      continue;
    try {
      ctx.api.writeScale(
        rt,
        String(getPath(d, ['metadata', 'namespace'])),
        String(getPath(d, ['metadata', 'name'])),
        { patch: { type: 'merge', body: { spec: { replicas: a.replicas } } } },
        { manager: AUTOSCALER_MANAGER },
      );
    } catch {
      ctx.wakeIn(0);
    }
  }
}

/**
 * The simulated mutating webhook: runs inside every Deployment write (like admission), adding an
 * annotation and optionally a sidecar container to the pod template.
 */
export function webhookMutator(writers: OtherWriters): (rt: ResourceType, o: JsonObject) => void {
  return (rt, o) => {
    const w = writers.webhook;
    if (!w || rt.custom || rt.group !== 'apps' || rt.kind !== 'Deployment') return;
    const m = isObject(o['metadata']) ? o['metadata'] : (o['metadata'] = {});
    if (w.annotation) {
      const ann = isObject(m['annotations']) ? m['annotations'] : (m['annotations'] = {});
      ann[w.annotation[0]] = w.annotation[1];
    }
    if (w.sidecar) {
      const spec = getPath(o, ['spec', 'template', 'spec']);
      if (!isObject(spec)) return;
      const containers = Array.isArray(spec['containers']) ? spec['containers'] : (spec['containers'] = []);
      if (!containers.some((c) => isObject(c) && c['name'] === w.sidecar!.name))
        containers.push({ name: w.sidecar.name, image: w.sidecar.image });
    }
  };
}

export type Mutator = (rt: ResourceType, o: JsonObject, api: ClusterApi) => void;
