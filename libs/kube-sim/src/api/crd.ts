import { getPath, isObject, type JsonObject, str } from '../json.js';
import { type ResourceType } from '../resources/resource-type.js';

/** The resource types a CustomResourceDefinition serves: one per served version. */
export function crdResourceTypes(crd: JsonObject): ResourceType[] {
  const spec = isObject(crd['spec']) ? crd['spec'] : {};
  const names = isObject(spec['names']) ? spec['names'] : {};
  const group = str(spec['group'] ?? '');
  const kind = str(names['kind'] ?? '');
  const plural = str(names['plural'] ?? `${kind.toLowerCase()}s`);
  const versions = Array.isArray(spec['versions']) ? spec['versions'].filter(isObject) : [];
  const served = versions.filter((v) => v['served'] !== false);
  // The storage version first, so it is the preferred one.
  served.sort((a, b) => Number(b['storage'] === true) - Number(a['storage'] === true));
  return served.map((v) => {
    const sub = isObject(v['subresources']) ? v['subresources'] : {};
    const scale = isObject(sub['scale']) ? sub['scale'] : undefined;
    const rt: ResourceType = {
      group,
      version: str(v['name']),
      kind,
      listKind: str(names['listKind'] ?? `${kind}List`),
      plural,
      singular: str(names['singular'] ?? kind.toLowerCase()),
      namespaced: spec['scope'] !== 'Cluster',
      shortNames: Array.isArray(names['shortNames']) ? names['shortNames'].map(String) : [],
      categories: Array.isArray(names['categories']) ? names['categories'].map(String) : [],
      hasStatus: isObject(sub['status']),
      hasScale: scale !== undefined,
      generation: 'custom',
      deleteReturnsObject: true,
      custom: true,
    };
    const schema = getPath(v, ['schema', 'openAPIV3Schema']);
    if (isObject(schema)) rt.schema = schema;
    if (scale)
      rt.scale = {
        specReplicasPath: str(scale['specReplicasPath'] ?? '.spec.replicas'),
        statusReplicasPath: str(scale['statusReplicasPath'] ?? '.status.replicas'),
        ...(typeof scale['labelSelectorPath'] === 'string'
          ? { labelSelectorPath: scale['labelSelectorPath'] }
          : {}),
      };
    return rt;
  });
}
