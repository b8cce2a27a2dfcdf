import { deepEqual, type JsonObject } from '../json.js';
import { type ResourceType } from '../resources/resource-type.js';

/** Whether an update bumps metadata.generation (registry strategies, §4.1). */
export function bumpsGeneration(rt: ResourceType, old: JsonObject, next: JsonObject): boolean {
  const annotations = (o: JsonObject): unknown =>
    (o['metadata'] as JsonObject | undefined)?.['annotations'] ?? {};
  switch (rt.generation) {
    case 'none':
      return false;
    case 'spec':
      return !deepEqual(old['spec'], next['spec']);
    case 'specAndAnnotations':
      return !deepEqual(old['spec'], next['spec']) || !deepEqual(annotations(old), annotations(next));
    case 'custom': {
      const rest = (o: JsonObject): JsonObject => {
        const c = { ...o };
        delete c['metadata'];
        delete c['apiVersion'];
        delete c['kind'];
        if (rt.hasStatus) delete c['status'];
        return c;
      };
      return !deepEqual(rest(old), rest(next));
    }
  }
}
