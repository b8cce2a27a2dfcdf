import { createHash } from 'node:crypto';
import { apiVersionOf, type ResourceType } from '../resources/resource-type.js';
import { type ResourceRegistry } from '../resources/resource-registry.js';

/**
 * A minimal `/openapi/v3` (§1.4): one PATCH operation per kind carrying its GVK and a
 * `fieldValidation` parameter (what kubectl's validation looks for), and component schemas with
 * the GVK extension for `kubectl explain`.
 */
const str = (description: string) => ({ type: 'string', description });

const OBJECT_META = {
  description: 'Standard object metadata.',
  type: 'object',
  properties: {
    name: str('Name must be unique within a namespace.'),
    namespace: str('Namespace defines the space within which each name must be unique.'),
    generateName: str('Prefix used by the server to generate a unique name.'),
    labels: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Map of string keys and values for selecting objects.',
    },
    annotations: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Unstructured key value map set by external tools.',
    },
    uid: str('UID is the unique in time and space value for this object.'),
    resourceVersion: str('An opaque value that represents the internal version of this object.'),
    generation: {
      type: 'integer',
      format: 'int64',
      description: 'A sequence number representing a specific generation of the desired state.',
    },
    creationTimestamp: str('The time this object was created (RFC 3339).'),
    deletionTimestamp: str('The time this object will be deleted (RFC 3339).'),
    finalizers: {
      type: 'array',
      items: { type: 'string' },
      'x-kubernetes-list-type': 'set',
      description: 'Must be empty before the object is deleted from the registry.',
    },
    ownerReferences: {
      type: 'array',
      items: { type: 'object' },
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['uid'],
      description: 'Objects this object depends on.',
    },
    managedFields: {
      type: 'array',
      items: { type: 'object' },
      description: 'Which managers own which fields.',
    },
  },
};

const KIND_FIELDS: Record<string, Record<string, unknown>> = {
  Deployment: {
    replicas: { type: 'integer', format: 'int32', description: 'Number of desired pods. Defaults to 1.' },
    selector: { type: 'object', description: 'Label selector for pods. Immutable.' },
    template: { type: 'object', description: 'Template describes the pods that will be created.' },
    strategy: {
      type: 'object',
      description: 'The deployment strategy to use to replace existing pods with new ones.',
    },
    revisionHistoryLimit: {
      type: 'integer',
      format: 'int32',
      description: 'The number of old ReplicaSets to retain. Defaults to 10.',
    },
    progressDeadlineSeconds: {
      type: 'integer',
      format: 'int32',
      description: 'The maximum time in seconds for a deployment to make progress. Defaults to 600s.',
    },
    minReadySeconds: {
      type: 'integer',
      format: 'int32',
      description: 'Minimum number of seconds a pod must be ready to count as available.',
    },
    paused: { type: 'boolean', description: 'Indicates that the deployment is paused.' },
  },
};

function schemaName(rt: ResourceType): string {
  const group = rt.group ? rt.group.split('.').reverse().join('.') : 'io.k8s.api.core';
  return `${rt.custom ? group : rt.group ? `io.k8s.api.${rt.group.split('.')[0]}` : group}.${rt.version}.${rt.kind}`;
}

function kindSchema(rt: ResourceType): Record<string, unknown> {
  const gvk = [{ group: rt.group, version: rt.version, kind: rt.kind }];
  if (rt.custom && rt.schema) {
    const props = { ...((rt.schema['properties'] as Record<string, unknown> | undefined) ?? {}) };
    props['metadata'] = OBJECT_META;
    props['apiVersion'] ??= str(
      'APIVersion defines the versioned schema of this representation of an object.',
    );
    props['kind'] ??= str('Kind is a string value representing the REST resource this object represents.');
    return { ...rt.schema, type: 'object', properties: props, 'x-kubernetes-group-version-kind': gvk };
  }
  return {
    description: `${rt.kind} (simulated ${apiVersionOf(rt)}).`,
    type: 'object',
    properties: {
      apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
      kind: str('Kind is a string value representing the REST resource this object represents.'),
      metadata: OBJECT_META,
      spec: {
        type: 'object',
        description: `Desired state of the ${rt.kind}.`,
        properties: KIND_FIELDS[rt.kind] ?? {},
        'x-kubernetes-preserve-unknown-fields': true,
      },
      status: {
        type: 'object',
        description: `Most recently observed status of the ${rt.kind}.`,
        'x-kubernetes-preserve-unknown-fields': true,
      },
      data: {
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'Data contains the key/value pairs.',
      },
    },
    'x-kubernetes-group-version-kind': gvk,
  };
}

const PARAMS = ['dryRun', 'fieldManager', 'fieldValidation', 'force', 'pretty'].map((name) => ({
  name,
  in: 'query',
  schema: { type: name === 'force' ? 'boolean' : 'string', uniqueItems: true },
}));

export function groupVersionDocument(
  registry: ResourceRegistry,
  group: string,
  version: string,
): object | undefined {
  const gv = registry.groupVersions().find((x) => x.group === group && x.version === version);
  if (!gv) return undefined;
  const base = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  for (const rt of gv.resources) {
    const gvk = { group: rt.group, version: rt.version, kind: rt.kind };
    const item = `${base}${rt.namespaced ? '/namespaces/{namespace}' : ''}/${rt.plural}/{name}`;
    const ref = { $ref: `#/components/schemas/${schemaName(rt)}` };
    const ok = { '200': { description: 'OK', content: { 'application/json': { schema: ref } } } };
    paths[item] = {
      get: {
        operationId: `read${rt.kind}`,
        'x-kubernetes-action': 'get',
        'x-kubernetes-group-version-kind': gvk,
        responses: ok,
      },
      put: {
        operationId: `replace${rt.kind}`,
        'x-kubernetes-action': 'put',
        'x-kubernetes-group-version-kind': gvk,
        parameters: PARAMS,
        responses: ok,
      },
      patch: {
        operationId: `patch${rt.kind}`,
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': gvk,
        parameters: PARAMS,
        responses: ok,
      },
      parameters: [
        { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
        ...(rt.namespaced
          ? [{ name: 'namespace', in: 'path', required: true, schema: { type: 'string' } }]
          : []),
      ],
    };
    paths[`${base}${rt.namespaced ? '/namespaces/{namespace}' : ''}/${rt.plural}`] = {
      post: {
        operationId: `create${rt.kind}`,
        'x-kubernetes-action': 'post',
        'x-kubernetes-group-version-kind': gvk,
        parameters: PARAMS,
        responses: ok,
      },
    };
    schemas[schemaName(rt)] = kindSchema(rt);
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.32.0' },
    paths,
    components: { schemas },
  };
}

export function openApiRoot(registry: ResourceRegistry): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of registry.groupVersions()) {
    const key = gv.group ? `apis/${gv.group}/${gv.version}` : `api/${gv.version}`;
    const doc = groupVersionDocument(registry, gv.group, gv.version);
    const hash = createHash('sha256').update(JSON.stringify(doc)).digest('hex').slice(0, 32).toUpperCase();
    paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
  }
  return { paths };
}
