import { type StatusCause } from '../errors.js';
import { deepEqual, getPath, isObject, type JsonObject } from '../json.js';
import { type ResourceType } from '../resources/resource-type.js';
import { labelSelectorMatches } from '../store/selectors.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const immutable = (field: string, value: unknown): StatusCause => ({
  reason: 'FieldValueInvalid',
  field,
  message: `Invalid value: ${JSON.stringify(value)}: field is immutable`,
});

const WORKLOADS = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet']);
const STS_MUTABLE = new Set([
  'replicas',
  'ordinals',
  'template',
  'updateStrategy',
  'persistentVolumeClaimRetentionPolicy',
  'minReadySeconds',
]);

/** Validation the simulator enforces (a useful subset): names, selectors, immutable fields. */
export function validate(rt: ResourceType, o: JsonObject, old: JsonObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = getPath(o, ['metadata', 'name']);
  if (typeof name !== 'string' || name === '')
    causes.push({
      reason: 'FieldValueRequired',
      field: 'metadata.name',
      message: 'Required value: name or generateName is required',
    });
  else if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.name',
      message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
    });
  const spec = isObject(o['spec']) ? o['spec'] : {};
  if (!rt.custom && rt.group === 'apps' && WORKLOADS.has(rt.kind)) {
    const selector = spec['selector'];
    if (!isObject(selector))
      causes.push({ reason: 'FieldValueRequired', field: 'spec.selector', message: 'Required value' });
    else {
      const labels = (getPath(spec, ['template', 'metadata', 'labels']) ?? {}) as Record<string, string>;
      if (!labelSelectorMatches(selector, labels))
        causes.push({
          reason: 'FieldValueInvalid',
          field: 'spec.template.metadata.labels',
          message: `Invalid value: ${JSON.stringify(labels)}: \`selector\` does not match template \`labels\``,
        });
    }
    const containers = getPath(spec, ['template', 'spec', 'containers']);
    if (!Array.isArray(containers) || containers.length === 0)
      causes.push({
        reason: 'FieldValueRequired',
        field: 'spec.template.spec.containers',
        message: 'Required value',
      });
    if (old && !deepEqual(getPath(old, ['spec', 'selector']), selector))
      causes.push(immutable('spec.selector', selector));
    // A strategy switched to Recreate keeps a defaulted rollingUpdate unless the write removes it
    // (kubectl's $retainKeys does): the apiserver refuses the pair.
    const strategy = rt.kind === 'Deployment' && isObject(spec['strategy']) ? spec['strategy'] : {};
    if (strategy['type'] === 'Recreate' && strategy['rollingUpdate'] !== undefined)
      causes.push({
        reason: 'FieldValueForbidden',
        field: 'spec.strategy.rollingUpdate',
        message: "Forbidden: may not be specified when strategy `type` is 'Recreate'",
      });
    if (old && rt.kind === 'StatefulSet') {
      const oldSpec = (old['spec'] ?? {}) as JsonObject;
      const changed = [...new Set([...Object.keys(spec), ...Object.keys(oldSpec)])].filter(
        (k) => !STS_MUTABLE.has(k) && k !== 'selector' && !deepEqual(spec[k], oldSpec[k]),
      );
      if (changed.length)
        causes.push({
          reason: 'FieldValueForbidden',
          field: 'spec',
          message: `Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`,
        });
    }
  }
  if (!rt.custom && rt.kind === 'Pod') {
    const containers = spec['containers'];
    if (!Array.isArray(containers) || containers.length === 0)
      causes.push({ reason: 'FieldValueRequired', field: 'spec.containers', message: 'Required value' });
  }
  if (!rt.custom && rt.kind === 'Job' && old) {
    const oldSpec = (old['spec'] ?? {}) as JsonObject;
    if (!deepEqual(oldSpec['selector'], spec['selector']))
      causes.push(immutable('spec.selector', spec['selector']));
    if (!deepEqual(oldSpec['template'], spec['template']))
      causes.push(immutable('spec.template', spec['template']));
  }
  if (!rt.custom && rt.kind === 'Service' && old) {
    const oldIp = getPath(old, ['spec', 'clusterIP']);
    if (oldIp !== undefined && spec['clusterIP'] !== oldIp && spec['type'] !== 'ExternalName')
      causes.push(immutable('spec.clusterIP', spec['clusterIP']));
  }
  if (!rt.custom && (rt.kind === 'ConfigMap' || rt.kind === 'Secret') && old && old['immutable'] === true) {
    if (!deepEqual(old['data'], o['data']) || !deepEqual(old['binaryData'], o['binaryData']))
      causes.push({
        reason: 'FieldValueForbidden',
        field: 'data',
        message: 'Forbidden: field is immutable when `immutable` is set',
      });
    if (o['immutable'] !== true) causes.push(immutable('immutable', o['immutable']));
  }
  if (old && getPath(old, ['metadata', 'deletionTimestamp']) !== undefined) {
    const before = (getPath(old, ['metadata', 'finalizers']) ?? []) as string[];
    const after = (getPath(o, ['metadata', 'finalizers']) ?? []) as string[];
    const added = after.filter((f) => !before.includes(f));
    if (added.length)
      causes.push({
        reason: 'FieldValueForbidden',
        field: 'metadata.finalizers',
        message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
      });
  }
  return causes;
}
