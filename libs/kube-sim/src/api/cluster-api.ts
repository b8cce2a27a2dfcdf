import { randomUUID } from 'node:crypto';
import jsonPatch, { type Operation } from 'fast-json-patch';
import { type SimClock, formatTime } from '../clock.js';
import {
  alreadyExists,
  badRequest,
  conflict,
  forbidden,
  invalid,
  notFound,
  StatusError,
  unsupportedMediaType,
  type StatusCause,
} from '../errors.js';
import { clone, deepEqual, getPath, isObject, meta, stripNulls, type JsonObject, str } from '../json.js';
import { applyDefaults, normaliseTimes } from '../defaults/defaults.js';
import { schemaFor } from '../fieldpath/field-schema.js';
import {
  decodeManagers,
  encodeManagers,
  recordUpdate,
  storedManagers,
  type Manager,
} from '../apply/managed-fields.js';
import { sameContent, serverSideApply } from '../apply/server-side-apply.js';
import { mergePatch } from '../patch/merge-patch.js';
import { strategicMergePatch } from '../patch/strategic-merge-patch.js';
import { apiVersionOf, resourceKey, type ResourceType } from '../resources/resource-type.js';
import { type ResourceRegistry } from '../resources/resource-registry.js';
import { type ObjectStore } from '../store/object-store.js';
import { parseFieldSelector, parseLabelSelector, selectorString } from '../store/selectors.js';
import { bumpsGeneration } from './generation.js';
import { validate } from './validation.js';
import { crdResourceTypes } from './crd.js';
import { type FieldValidation, pruneUnknownFields, strictDecodingMessage } from './unknown-fields.js';

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export const PATCH_CONTENT_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
  'application/apply-patch+json': 'apply',
};

export interface WriteOptions {
  manager: string;
  dryRun?: boolean;
  subresource?: 'status' | 'scale';
  /** What to do with fields the kind's schema does not declare; `Warn` when unset, as the apiserver. */
  fieldValidation?: FieldValidation;
  /** Hears each warning the write gives (the HTTP layer turns them into `Warning` headers). */
  warn?: (message: string) => void;
}

export interface PatchOptions extends WriteOptions {
  force?: boolean;
}

export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  dryRun?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface ListOptions {
  labelSelector?: string | null;
  fieldSelector?: string | null;
}

/** Hooks a cluster's controllers use to hear about writes. */
export type ChangeListener = () => void;

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

/** The apiserver's maxGeneratedNameLength: 63 less the 5 random characters. */
const MAX_GENERATED_NAME_PREFIX = 58;

export function randomSuffix(n = 5): string {
  let s = '';
  for (let i = 0; i < n; i++) s += NAME_CHARS[Math.floor(Math.random() * NAME_CHARS.length)];
  return s;
}

/**
 * The API semantics of one cluster, independent of HTTP: create, update, patch (JSON, merge,
 * strategic, apply), delete with finalizers and propagation, subresources, lists. Every write
 * goes through `commit`, which defaults, validates, tracks managedFields and generation, and
 * skips no-op writes. Objects it returns are the store's immutable snapshots, not copies: read
 * them, or clone them before changing anything.
 */
export class ClusterApi {
  private nextIp = 10;
  private nextNodePort = 30000;
  /** Admission-style mutations run on every write before defaulting (e.g. the simulated webhook). */
  readonly mutators: ((rt: ResourceType, o: JsonObject) => void)[] = [];

  constructor(
    readonly registry: ResourceRegistry,
    readonly store: ObjectStore,
    readonly clock: SimClock,
  ) {}

  now(): string {
    return formatTime(this.clock.now());
  }

  /** Creates what a fresh cluster has: the four system namespaces and the kubernetes Service. */
  bootstrap(): void {
    const ns = this.rt('', 'v1', 'namespaces');
    for (const name of SYSTEM_NAMESPACES)
      this.create(
        ns,
        '',
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
        { manager: 'kube-apiserver' },
      );
    this.nextIp = 1;
    this.create(
      this.rt('', 'v1', 'services'),
      'default',
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kubernetes', labels: { component: 'apiserver', provider: 'kubernetes' } },
        spec: { ports: [{ name: 'https', port: 443, targetPort: 6443 }] },
      },
      { manager: 'kube-apiserver' },
    );
    this.nextIp = 10;
  }

  rt(group: string, version: string, plural: string): ResourceType {
    const rt = this.registry.lookup(group, version, plural);
    if (!rt) throw new Error(`unknown resource ${group}/${version}/${plural}`);
    return rt;
  }

  // ---------------------------------------------------------------- reads

  get(rt: ResourceType, namespace: string, name: string): JsonObject {
    const o = this.store.get(resourceKey(rt), rt.namespaced ? namespace : '', name);
    if (!o) throw notFound(rt.plural, rt.group, name);
    return o;
  }

  tryGet(rt: ResourceType, namespace: string, name: string): JsonObject | undefined {
    return this.store.get(resourceKey(rt), rt.namespaced ? namespace : '', name);
  }

  list(
    rt: ResourceType,
    namespace: string | undefined,
    o: ListOptions = {},
  ): { items: JsonObject[]; resourceVersion: string } {
    const byLabel = parseLabelSelector(o.labelSelector);
    const byField = parseFieldSelector(o.fieldSelector, rt.kind, rt.custom);
    const items = this.store
      .list(resourceKey(rt), rt.namespaced ? namespace : undefined)
      .filter((x) => byLabel(x) && byField(x));
    return { items, resourceVersion: str(this.store.resourceVersion) };
  }

  // ---------------------------------------------------------------- writes

  private checkBody(rt: ResourceType, body: unknown): JsonObject {
    if (!isObject(body)) throw badRequest('the body of the request must be a JSON or YAML object');
    const apiVersion = apiVersionOf(rt);
    if (body['apiVersion'] !== undefined && body['apiVersion'] !== apiVersion)
      throw badRequest(
        `the API version in the data (${str(body['apiVersion'])}) does not match the expected API version (${apiVersion})`,
      );
    if (body['kind'] !== undefined && body['kind'] !== rt.kind)
      throw badRequest(
        `the kind in the data (${str(body['kind'])}) does not match the expected kind (${rt.kind})`,
      );
    const o = clone(body);
    o['apiVersion'] = apiVersion;
    o['kind'] = rt.kind;
    if (!isObject(o['metadata'])) o['metadata'] = {};
    return o;
  }

  private checkNamespace(rt: ResourceType, namespace: string, o: JsonObject, creating: boolean): void {
    const m = meta(o);
    if (!rt.namespaced) {
      delete m['namespace'];
      return;
    }
    if (m['namespace'] !== undefined && m['namespace'] !== '' && m['namespace'] !== namespace)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    m['namespace'] = namespace;
    if (!creating) return;
    const ns = this.store.get('/namespaces', '', namespace);
    if (!ns) throw notFound('namespaces', '', namespace);
    if (getPath(ns, ['metadata', 'deletionTimestamp']) !== undefined)
      throw forbidden(
        `${rt.plural}${rt.group ? `.${rt.group}` : ''} "${str(m['name'] ?? '')}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
        {
          name: str(m['name'] ?? ''),
          group: rt.group,
          kind: rt.plural,
          causes: [
            {
              reason: 'NamespaceTerminating',
              message: `namespace ${namespace} is being terminated`,
              field: 'metadata.namespace',
            },
          ],
        },
      );
  }

  create(
    rt: ResourceType,
    namespace: string,
    body: unknown,
    o: WriteOptions,
    managers?: Manager[],
  ): JsonObject {
    const obj = this.checkBody(rt, body);
    const m = meta(obj);
    const generateName = m['generateName'];
    if (!m['name'] && typeof generateName === 'string' && generateName) {
      // As the apiserver: the prefix is cut so that the name fits 63 characters, and a generated
      // name that is taken is drawn again (RetryGenerateName: 7 retries) before 409 AlreadyExists.
      const base = generateName.slice(0, MAX_GENERATED_NAME_PREFIX);
      for (let attempt = 0; attempt < 8; attempt++) {
        m['name'] = `${base}${randomSuffix()}`;
        if (!this.tryGet(rt, namespace, str(m['name']))) break;
      }
    }
    this.checkNamespace(rt, namespace, obj, true);
    const name = str(m['name'] ?? '');
    if (name && this.tryGet(rt, namespace, name)) throw alreadyExists(rt.plural, rt.group, name);
    m['uid'] = randomUUID();
    m['creationTimestamp'] = this.now();
    delete m['resourceVersion'];
    delete m['deletionTimestamp'];
    delete m['deletionGracePeriodSeconds'];
    delete m['selfLink'];
    if (rt.generation !== 'none') m['generation'] = 1;
    else delete m['generation'];
    // The status of a new object is the server's (strategies reset it; defaults may set a phase).
    if (rt.hasStatus) delete obj['status'];
    return this.commit(rt, undefined, obj, o, managers);
  }

  update(rt: ResourceType, namespace: string, name: string, body: unknown, o: WriteOptions): JsonObject {
    const obj = this.checkBody(rt, body);
    const m = meta(obj);
    if (m['name'] !== undefined && m['name'] !== name)
      throw badRequest(
        `the name of the object (${str(m['name'])}) does not match the name on the URL (${name})`,
      );
    m['name'] = name;
    this.checkNamespace(rt, namespace, obj, false);
    const old = this.get(rt, namespace, name);
    this.checkPreconditions(rt, old, obj);
    return this.commit(rt, old, obj, o);
  }

  private checkPreconditions(rt: ResourceType, old: JsonObject, next: JsonObject): void {
    const name = str(getPath(old, ['metadata', 'name']));
    const rv = getPath(next, ['metadata', 'resourceVersion']);
    if (rv !== undefined && rv !== '' && rv !== getPath(old, ['metadata', 'resourceVersion']))
      throw conflict(rt.plural, rt.group, name);
    const uid = getPath(next, ['metadata', 'uid']);
    if (uid !== undefined && uid !== '' && uid !== getPath(old, ['metadata', 'uid']))
      throw conflict(
        rt.plural,
        rt.group,
        name,
        `Precondition failed: UID in precondition: ${str(uid)}, UID in object meta: ${str(getPath(old, ['metadata', 'uid']))}`,
      );
  }

  patch(
    rt: ResourceType,
    namespace: string,
    name: string,
    type: PatchType,
    body: unknown,
    o: PatchOptions,
  ): { object: JsonObject; created: boolean } {
    if (o.force !== undefined && type !== 'apply')
      throw invalid('PatchOptions', 'meta.k8s.io', '', [
        {
          reason: 'FieldValueForbidden',
          field: 'force',
          message: 'Forbidden: may not be specified for non-apply patch',
        },
      ]);
    if (type === 'apply') return this.apply(rt, namespace, name, body, o);
    const old = this.get(rt, namespace, name);
    const patched = this.applyPatch(rt, old, type, body);
    if (!isObject(patched)) throw badRequest('the patch did not produce an object');
    const obj = this.checkBody(rt, { ...patched, apiVersion: undefined, kind: undefined });
    const m = meta(obj);
    if (m['name'] !== name)
      throw badRequest(
        `the name of the object (${str(m['name'])}) does not match the name on the URL (${name})`,
      );
    this.checkNamespace(rt, namespace, obj, false);
    this.checkPreconditions(rt, old, obj);
    return { object: this.commit(rt, old, obj, o), created: false };
  }

  applyPatch(
    rt: ResourceType,
    target: JsonObject,
    type: Exclude<PatchType, 'apply'>,
    body: unknown,
  ): unknown {
    switch (type) {
      case 'json': {
        if (!Array.isArray(body))
          throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
        try {
          return jsonPatch.applyPatch(clone(target), body as Operation[], true, false).newDocument;
        } catch (err) {
          const message = err instanceof Error ? err.message.split('\n')[0] : str(err);
          throw new StatusError(
            422,
            'Invalid',
            `the server rejected our request due to an error in our request: ${message}`,
          );
        }
      }
      case 'merge':
        if (!isObject(body)) throw badRequest('merge patch must be a JSON object');
        return mergePatch(target, body);
      case 'strategic':
        if (rt.custom) throw unsupportedMediaType('application/strategic-merge-patch+json');
        if (!isObject(body)) throw badRequest('strategic merge patch must be a JSON object');
        return strategicMergePatch(target, body, schemaFor(rt));
    }
  }

  apply(
    rt: ResourceType,
    namespace: string,
    name: string,
    body: unknown,
    o: PatchOptions,
  ): { object: JsonObject; created: boolean } {
    if (!o.manager || o.manager === '\u0000')
      throw invalid('PatchOptions', 'meta.k8s.io', '', [
        {
          reason: 'FieldValueRequired',
          field: 'fieldManager',
          message: 'Required value: is required for apply patch',
        },
      ]);
    if (!isObject(body)) throw badRequest('error decoding YAML: the apply patch must be an object');
    const apiVersion = apiVersionOf(rt);
    if (body['apiVersion'] !== apiVersion)
      throw badRequest(
        `Incorrect version specified in apply patch. Specified patch version: ${str(body['apiVersion'] ?? '')}, expected: ${apiVersion}`,
      );
    if (body['kind'] !== rt.kind)
      throw badRequest(
        `Incorrect kind specified in apply patch. Specified patch kind: ${str(body['kind'] ?? '')}, expected: ${rt.kind}`,
      );
    const cfgMeta = isObject(body['metadata']) ? body['metadata'] : {};
    if (cfgMeta['managedFields'] !== undefined && cfgMeta['managedFields'] !== null)
      throw badRequest('metadata.managedFields must be nil');
    if (cfgMeta['name'] !== undefined && cfgMeta['name'] !== name)
      throw badRequest(
        `the name of the object (${str(cfgMeta['name'])}) does not match the name on the URL (${name})`,
      );
    if (rt.namespaced && cfgMeta['namespace'] !== undefined && cfgMeta['namespace'] !== namespace)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    const config = stripNulls(body) as JsonObject;
    const cm = meta(config);
    for (const k of ['creationTimestamp', 'uid', 'generation', 'selfLink', 'deletionTimestamp']) delete cm[k];
    const configRv = cm['resourceVersion'];
    delete cm['resourceVersion'];
    cm['name'] = name;
    if (rt.namespaced) cm['namespace'] = namespace;
    else delete cm['namespace'];

    // Pruned before the merge, so fields the schema drops are never owned by the applier either.
    this.pruneUnknown(rt, config, o);
    const old = this.tryGet(rt, namespace, name);
    if (old && configRv !== undefined && configRv !== getPath(old, ['metadata', 'resourceVersion']))
      throw conflict(rt.plural, rt.group, name);
    if (!old && o.subresource) throw notFound(rt.plural, rt.group, name);
    const time = this.now();
    const result = serverSideApply(old, old ? storedManagers(old) : [], config, {
      manager: o.manager,
      apiVersion,
      force: o.force ?? false,
      subresource: o.subresource,
      time,
      schema: schemaFor(rt),
      hasStatus: rt.hasStatus,
      name,
      group: rt.group,
      resource: rt.plural,
    });
    if (!old) {
      result.applier.time = time;
      return { object: this.create(rt, namespace, result.object, o, result.managers), created: true };
    }
    const next = result.object;
    meta(next)['managedFields'] = undefined;
    return { object: this.commit(rt, old, next, o, result.managers, result.applier), created: false };
  }

  /**
   * The single write path. `managers` is set for apply (already computed); otherwise an Update
   * entry is recorded for `o.manager`. `applier` gets a fresh time only if the object changed.
   */
  private commit(
    rt: ResourceType,
    old: JsonObject | undefined,
    next: JsonObject,
    o: WriteOptions,
    applyManagers?: Manager[],
    applier?: Manager,
  ): JsonObject {
    const key = resourceKey(rt);
    const m = meta(next);
    let obj = next;
    if (old) {
      const om = meta(old);
      for (const k of [
        'uid',
        'creationTimestamp',
        'deletionTimestamp',
        'deletionGracePeriodSeconds',
        'generation',
        'name',
        'namespace',
      ])
        if (om[k] === undefined) delete m[k];
        else m[k] = om[k];
      if (o.subresource === 'status') {
        obj = clone(old);
        obj['status'] = next['status'];
        const annotations = m['annotations'];
        if (annotations === undefined) delete meta(obj)['annotations'];
        else meta(obj)['annotations'] = annotations;
        meta(obj)['managedFields'] = m['managedFields'];
      } else if (rt.hasStatus && o.subresource !== 'scale') {
        if (old['status'] === undefined) delete obj['status'];
        else obj['status'] = clone(old['status']);
      }
    }
    this.pruneUnknown(rt, obj, o);
    const requestManaged = meta(obj)['managedFields'];
    normaliseTimes(requestManaged);
    delete meta(obj)['managedFields'];
    if (o.subresource === undefined) for (const mutate of this.mutators) mutate(rt, obj);
    const errors: StatusCause[] = [];
    applyDefaults(rt.kind, rt.custom ? `custom:${rt.group}` : rt.group, obj, {
      old,
      errors,
      allocateClusterIP: () => this.allocateIp(),
      allocateNodePort: () => this.nextNodePort++,
    });
    const name = str(meta(obj)['name'] ?? '');
    errors.push(...validate(rt, obj, old));
    if (errors.length) throw invalid(rt.kind, rt.group, name, errors);

    if (old && rt.generation !== 'none' && o.subresource !== 'status') {
      const gen = Number(getPath(old, ['metadata', 'generation']) ?? 1);
      meta(obj)['generation'] = bumpsGeneration(rt, old, obj) ? gen + 1 : gen;
    }

    // managedFields: honoured verbatim when a non-apply write sets them (Flux rewrites them with a
    // JSON patch; an empty list resets tracking), else the writer's entry is recorded.
    const schema = schemaFor(rt);
    const oldManaged = old ? getPath(old, ['metadata', 'managedFields']) : undefined;
    let managers: Manager[];
    if (applyManagers) {
      managers = applyManagers;
      if (applier && (!old || !sameContent(old, obj))) applier.time = this.now();
    } else if (Array.isArray(requestManaged) && !deepEqual(requestManaged, oldManaged ?? [])) {
      managers = decodeManagers({ metadata: { managedFields: requestManaged } });
    } else {
      const before = old ? withoutManaged(old) : {};
      managers = recordUpdate(old ? storedManagers(old) : [], before, obj, {
        manager: o.manager,
        apiVersion: apiVersionOf(rt),
        subresource: o.subresource,
        time: this.now(),
        schema,
        hasStatus: rt.hasStatus,
      });
    }
    if (managers.length) meta(obj)['managedFields'] = encodeManagers(managers);

    if (old) {
      meta(obj)['resourceVersion'] = getPath(old, ['metadata', 'resourceVersion']);
      if (deepEqual(old, obj)) return old;
    }
    if (o.dryRun) {
      if (!old) delete meta(obj)['resourceVersion'];
      return obj;
    }
    const deleting = getPath(obj, ['metadata', 'deletionTimestamp']) !== undefined;
    const finalizers = getPath(obj, ['metadata', 'finalizers']);
    if (old && deleting && (!Array.isArray(finalizers) || finalizers.length === 0)) {
      const ns = str(meta(obj)['namespace'] ?? '');
      this.store.put(key, obj, 'MODIFIED');
      const last = this.store.remove(key, ns, name);
      return last ?? obj;
    }
    const stored = this.store.put(key, obj, old ? 'MODIFIED' : 'ADDED');
    if (rt.group === 'apiextensions.k8s.io' && rt.kind === 'CustomResourceDefinition') this.syncCrd(stored);
    return stored;
  }

  /**
   * The decoding step of a custom resource's write: fields its structural schema does not declare
   * are refused (`Strict`) or dropped, with a warning unless told to `Ignore` them. Built-in kinds
   * are not checked: the simulator holds no full schema for them.
   */
  private pruneUnknown(rt: ResourceType, obj: JsonObject, o: WriteOptions): void {
    if (!rt.custom || !rt.schema) return;
    const mode = o.fieldValidation ?? 'Warn';
    const candidate = mode === 'Strict' ? clone(obj) : obj;
    const unknown = pruneUnknownFields(candidate, rt.schema);
    if (!unknown.length) return;
    if (mode === 'Strict') throw badRequest(strictDecodingMessage(unknown));
    if (mode === 'Warn') for (const path of unknown) o.warn?.(`unknown field "${path}"`);
  }

  private allocateIp(): string {
    const n = this.nextIp++;
    return `10.96.${Math.floor(n / 250)}.${n % 250}`;
  }

  // ---------------------------------------------------------------- delete

  delete(
    rt: ResourceType,
    namespace: string,
    name: string,
    o: DeleteOptions,
  ): { object: JsonObject; gone: boolean } {
    const key = resourceKey(rt);
    const ns = rt.namespaced ? namespace : '';
    const old = this.get(rt, namespace, name);
    const om = meta(old);
    if (o.preconditions?.uid && o.preconditions.uid !== om['uid'])
      throw conflict(
        rt.plural,
        rt.group,
        name,
        `Precondition failed: UID in precondition: ${o.preconditions.uid}, UID in object meta: ${str(om['uid'])}`,
      );
    if (o.preconditions?.resourceVersion && o.preconditions.resourceVersion !== om['resourceVersion'])
      throw conflict(
        rt.plural,
        rt.group,
        name,
        `Precondition failed: ResourceVersion in precondition: ${o.preconditions.resourceVersion}, ResourceVersion in object meta: ${str(om['resourceVersion'])}`,
      );
    const policy =
      o.propagationPolicy ?? (rt.group === 'batch' && rt.kind === 'Job' ? 'Orphan' : 'Background');
    const finalizers = Array.isArray(om['finalizers']) ? [...(om['finalizers'] as string[])] : [];
    if (policy === 'Foreground' && !finalizers.includes('foregroundDeletion'))
      finalizers.push('foregroundDeletion');
    if (policy === 'Orphan' && !finalizers.includes('orphan') && this.hasDependents(str(om['uid'])))
      finalizers.push('orphan');
    const isNamespace = !rt.custom && rt.kind === 'Namespace';
    if (finalizers.length === 0 && !isNamespace) {
      if (o.dryRun) return { object: old, gone: true };
      const last = this.store.remove(key, ns, name)!;
      if (rt.group === 'apiextensions.k8s.io' && rt.kind === 'CustomResourceDefinition') this.dropCrd(last);
      return { object: last, gone: true };
    }
    const next = clone(old);
    const nm = meta(next);
    if (nm['deletionTimestamp'] === undefined) {
      nm['deletionTimestamp'] = this.now();
      nm['deletionGracePeriodSeconds'] = 0;
    }
    if (finalizers.length) nm['finalizers'] = finalizers;
    if (isNamespace)
      next['status'] = { ...(isObject(next['status']) ? next['status'] : {}), phase: 'Terminating' };
    if (o.dryRun) return { object: next, gone: false };
    if (deepEqual(next, old)) return { object: old, gone: false };
    return { object: this.store.put(key, next, 'MODIFIED'), gone: false };
  }

  private hasDependents(uid: string): boolean {
    for (const { object } of this.store.entries()) {
      const refs = getPath(object, ['metadata', 'ownerReferences']);
      if (Array.isArray(refs) && refs.some((r) => isObject(r) && r['uid'] === uid)) return true;
    }
    return false;
  }

  /** Removes finalizers from an object being deleted, as a controller would (through update). */
  removeFinalizer(rt: ResourceType, o: JsonObject, finalizer: string, manager: string): void {
    const next = clone(o);
    const m = meta(next);
    const list = (Array.isArray(m['finalizers']) ? (m['finalizers'] as string[]) : []).filter(
      (f) => f !== finalizer,
    );
    if (list.length) m['finalizers'] = list;
    else delete m['finalizers'];
    delete m['resourceVersion'];
    try {
      this.update(rt, str(m['namespace'] ?? ''), str(m['name']), next, { manager });
    } catch (err) {
      if (!(err instanceof StatusError && err.code === 404)) throw err;
    }
  }

  // ---------------------------------------------------------------- scale

  getScale(rt: ResourceType, namespace: string, name: string): JsonObject {
    const o = this.get(rt, namespace, name);
    return this.toScale(rt, o);
  }

  private toScale(rt: ResourceType, o: JsonObject): JsonObject {
    const m = meta(o);
    const specPath = rt.scale?.specReplicasPath.split('.').filter(Boolean) ?? ['spec', 'replicas'];
    const statusPath = rt.scale?.statusReplicasPath.split('.').filter(Boolean) ?? ['status', 'replicas'];
    const selectorPath = rt.scale?.labelSelectorPath?.split('.').filter(Boolean);
    const selector = selectorPath
      ? getPath(o, selectorPath)
      : selectorString(getPath(o, ['spec', 'selector']));
    const scale: JsonObject = {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: {
        name: m['name'],
        namespace: m['namespace'],
        uid: m['uid'],
        resourceVersion: m['resourceVersion'],
        creationTimestamp: m['creationTimestamp'],
      },
      spec: { replicas: Number(getPath(o, specPath) ?? 0) },
      status: { replicas: Number(getPath(o, statusPath) ?? 0) },
    };
    if (selector) (scale['status'] as JsonObject)['selector'] = selector;
    return scale;
  }

  /** PUT or PATCH of `/scale`: the parent's replicas change through an Update with subresource "scale". */
  writeScale(
    rt: ResourceType,
    namespace: string,
    name: string,
    change: { put?: unknown; patch?: { type: Exclude<PatchType, 'apply'>; body: unknown } },
    o: WriteOptions,
  ): JsonObject {
    const old = this.get(rt, namespace, name);
    const current = this.toScale(rt, old);
    let scale: unknown;
    if (change.put !== undefined) scale = change.put;
    else if (change.patch) {
      const { type, body } = change.patch;
      if (type === 'json') scale = this.applyPatch(rt, current, 'json', body);
      else if (type === 'merge' || type === 'strategic') scale = mergePatch(current, body);
    }
    const replicas = getPath(scale, ['spec', 'replicas']);
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)
      throw invalid('Scale', 'autoscaling', name, [
        {
          field: 'spec.replicas',
          message: `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`,
        },
      ]);
    const rv = getPath(scale, ['metadata', 'resourceVersion']);
    if (
      change.put !== undefined &&
      rv !== undefined &&
      rv !== '' &&
      rv !== getPath(old, ['metadata', 'resourceVersion'])
    )
      throw conflict(rt.plural, rt.group, name);
    const next = clone(old);
    const specPath = rt.scale?.specReplicasPath.split('.').filter(Boolean) ?? ['spec', 'replicas'];
    let cur = next;
    for (const k of specPath.slice(0, -1)) cur = isObject(cur[k]) ? cur[k] : (cur[k] = {});
    cur[specPath[specPath.length - 1]!] = replicas;
    delete meta(next)['managedFields'];
    const updated = this.commit(rt, old, next, { ...o, subresource: 'scale' });
    return this.toScale(rt, updated);
  }

  // ---------------------------------------------------------------- CRDs

  private syncCrd(crd: JsonObject): void {
    const name = str(meta(crd)['name']);
    const types = crdResourceTypes(crd);
    if (getPath(crd, ['metadata', 'deletionTimestamp']) === undefined) this.registry.setCustom(types, name);
    const conditions = getPath(crd, ['status', 'conditions']);
    const established =
      Array.isArray(conditions) && conditions.some((c) => isObject(c) && c['type'] === 'Established');
    if (established) return;
    const now = this.now();
    const status = {
      conditions: [
        {
          type: 'NamesAccepted',
          status: 'True',
          lastTransitionTime: now,
          reason: 'NoConflicts',
          message: 'no conflicts found',
        },
        {
          type: 'Established',
          status: 'True',
          lastTransitionTime: now,
          reason: 'InitialNamesAccepted',
          message: 'the initial names have been accepted',
        },
      ],
      acceptedNames: getPath(crd, ['spec', 'names']) ?? {},
      storedVersions: types.slice(0, 1).map((t) => t.version),
    };
    const crdRt = this.rt('apiextensions.k8s.io', 'v1', 'customresourcedefinitions');
    this.update(crdRt, '', name, { ...crd, status }, { manager: 'kube-apiserver', subresource: 'status' });
  }

  private dropCrd(crd: JsonObject): void {
    const name = str(meta(crd)['name']);
    const types = crdResourceTypes(crd);
    const first = types[0];
    if (first) {
      const key = resourceKey(first);
      for (const o of this.store.list(key))
        this.store.remove(key, str(meta(o)['namespace'] ?? ''), str(meta(o)['name']));
    }
    this.registry.removeCustom(name);
  }
}

/** A shallow view of a stored snapshot without its managedFields (nothing is copied or changed). */
function withoutManaged(o: JsonObject): JsonObject {
  return isObject(o['metadata']) ? { ...o, metadata: { ...o['metadata'], managedFields: undefined } } : o;
}
