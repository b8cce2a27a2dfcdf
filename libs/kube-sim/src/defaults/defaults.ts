import { type StatusCause } from '../errors.js';
import { isObject, obj, type JsonObject } from '../json.js';
import { canonicalQuantity, QuantityError } from './quantity.js';

/**
 * Server-side defaulting and canonical forms (pkg/apis/{apps,core,batch}/v1/defaults.go and the
 * registry strategies). These are exactly the fields that make naive GitOps diffs see drift.
 */
export interface DefaultingContext {
  /** The stored object on update, undefined on create (allocated values are carried over). */
  old?: JsonObject;
  allocateClusterIP(): string;
  allocateNodePort(): number;
  /** Collected canonicalisation failures (bad quantities) → 422. */
  errors: StatusCause[];
}

function setDefault(o: JsonObject, key: string, value: unknown): void {
  if (o[key] === undefined || o[key] === null) o[key] = value;
}

function imagePullPolicy(image: string): string {
  const noDigest = !image.includes('@');
  const lastSlash = image.lastIndexOf('/');
  const tagIdx = image.indexOf(':', lastSlash + 1);
  const tag = tagIdx >= 0 ? image.slice(tagIdx + 1).split('@')[0] : '';
  if (noDigest && (!tag || tag === 'latest')) return 'Always';
  return 'IfNotPresent';
}

function canonicalResources(resources: JsonObject, path: string, ctx: DefaultingContext): void {
  for (const part of ['limits', 'requests']) {
    const m = resources[part];
    if (!isObject(m)) continue;
    for (const [k, v] of Object.entries(m)) {
      if (typeof v !== 'string' && typeof v !== 'number') continue;
      try {
        m[k] = canonicalQuantity(v);
      } catch (err) {
        if (!(err instanceof QuantityError)) throw err;
        ctx.errors.push({
          reason: 'FieldValueInvalid',
          field: `${path}.${part}[${k}]`,
          message: `Invalid value: "${v}": ${err.message}`,
        });
      }
    }
  }
}

function defaultProbe(p: unknown): void {
  if (!isObject(p)) return;
  setDefault(p, 'timeoutSeconds', 1);
  setDefault(p, 'periodSeconds', 10);
  setDefault(p, 'successThreshold', 1);
  setDefault(p, 'failureThreshold', 3);
  if (isObject(p['httpGet'])) {
    setDefault(p['httpGet'], 'path', '/');
    setDefault(p['httpGet'], 'scheme', 'HTTP');
  }
}

function defaultContainer(c: JsonObject, path: string, ctx: DefaultingContext): void {
  setDefault(c, 'terminationMessagePath', '/dev/termination-log');
  setDefault(c, 'terminationMessagePolicy', 'File');
  if (typeof c['image'] === 'string') setDefault(c, 'imagePullPolicy', imagePullPolicy(c['image']));
  setDefault(c, 'resources', {});
  if (isObject(c['resources'])) canonicalResources(c['resources'], `${path}.resources`, ctx);
  if (Array.isArray(c['ports']))
    for (const p of c['ports']) if (isObject(p)) setDefault(p, 'protocol', 'TCP');
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) defaultProbe(c[probe]);
  if (Array.isArray(c['env']))
    for (const e of c['env']) {
      const fieldRef = isObject(e) && isObject(e['valueFrom']) ? e['valueFrom']['fieldRef'] : undefined;
      if (isObject(fieldRef)) setDefault(fieldRef, 'apiVersion', 'v1');
    }
}

export function defaultPodSpec(
  spec: JsonObject,
  path: string,
  ctx: DefaultingContext,
  restartPolicy = true,
): void {
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  if (restartPolicy) setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'schedulerName', 'default-scheduler');
  setDefault(spec, 'securityContext', {});
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  for (const list of ['initContainers', 'containers']) {
    const cs = spec[list];
    if (Array.isArray(cs))
      cs.forEach((c, i) => isObject(c) && defaultContainer(c, `${path}.${list}[${i}]`, ctx));
  }
  if (Array.isArray(spec['volumes']))
    for (const v of spec['volumes']) {
      if (!isObject(v)) continue;
      const sources = Object.keys(v).filter((k) => k !== 'name');
      if (sources.length === 0) v['emptyDir'] = {};
      for (const s of ['configMap', 'secret', 'projected', 'downwardAPI'])
        if (isObject(v[s])) setDefault(v[s], 'defaultMode', 420);
      if (isObject(v['hostPath'])) setDefault(v['hostPath'], 'type', '');
    }
}

function defaultTemplate(
  template: unknown,
  path: string,
  ctx: DefaultingContext,
  restartPolicy = true,
): void {
  if (!isObject(template)) return;
  const m = obj(template, 'metadata');
  if (!('creationTimestamp' in m)) m['creationTimestamp'] = null;
  defaultPodSpec(obj(template, 'spec'), `${path}.spec`, ctx, restartPolicy);
}

function defaultDeployment(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  setDefault(spec, 'replicas', 1);
  const strategy = obj(spec, 'strategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy['type'] === 'RollingUpdate') {
    const ru = obj(strategy, 'rollingUpdate');
    setDefault(ru, 'maxSurge', '25%');
    setDefault(ru, 'maxUnavailable', '25%');
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  setDefault(spec, 'progressDeadlineSeconds', 600);
  defaultTemplate(spec['template'], 'spec.template', ctx);
}

function defaultStatefulSet(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  setDefault(spec, 'replicas', 1);
  setDefault(spec, 'podManagementPolicy', 'OrderedReady');
  const us = obj(spec, 'updateStrategy');
  setDefault(us, 'type', 'RollingUpdate');
  if (us['type'] === 'RollingUpdate') setDefault(obj(us, 'rollingUpdate'), 'partition', 0);
  setDefault(spec, 'revisionHistoryLimit', 10);
  const retention = obj(spec, 'persistentVolumeClaimRetentionPolicy');
  setDefault(retention, 'whenDeleted', 'Retain');
  setDefault(retention, 'whenScaled', 'Retain');
  defaultTemplate(spec['template'], 'spec.template', ctx);
  if (Array.isArray(spec['volumeClaimTemplates']))
    for (const t of spec['volumeClaimTemplates'])
      if (isObject(t)) {
        const s = obj(t, 'spec');
        setDefault(s, 'volumeMode', 'Filesystem');
        if (!isObject(t['status'])) t['status'] = { phase: 'Pending' };
        if (isObject(s['resources']))
          canonicalResources(s['resources'], 'spec.volumeClaimTemplates.spec.resources', ctx);
      }
}

function defaultDaemonSet(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  const us = obj(spec, 'updateStrategy');
  setDefault(us, 'type', 'RollingUpdate');
  if (us['type'] === 'RollingUpdate') {
    const ru = obj(us, 'rollingUpdate');
    setDefault(ru, 'maxUnavailable', 1);
    setDefault(ru, 'maxSurge', 0);
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  defaultTemplate(spec['template'], 'spec.template', ctx);
}

function defaultJobSpec(spec: JsonObject, path: string, ctx: DefaultingContext): void {
  setDefault(spec, 'completions', 1);
  setDefault(spec, 'parallelism', 1);
  setDefault(spec, 'backoffLimit', 6);
  setDefault(spec, 'completionMode', 'NonIndexed');
  setDefault(spec, 'suspend', false);
  setDefault(spec, 'podReplacementPolicy', 'TerminatingOrFailed');
  defaultTemplate(spec['template'], `${path}.template`, ctx, false);
}

function defaultJob(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  defaultJobSpec(spec, 'spec', ctx);
  const m = obj(o, 'metadata');
  const uid = typeof m['uid'] === 'string' ? m['uid'] : '';
  const name = typeof m['name'] === 'string' ? m['name'] : '';
  if (uid && spec['manualSelector'] !== true) {
    if (!isObject(spec['selector']))
      spec['selector'] = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
    const t = spec['template'];
    if (isObject(t)) {
      const labels = obj(obj(t, 'metadata'), 'labels');
      setDefault(labels, 'batch.kubernetes.io/controller-uid', uid);
      setDefault(labels, 'batch.kubernetes.io/job-name', name);
      setDefault(labels, 'controller-uid', uid);
      setDefault(labels, 'job-name', name);
    }
  }
}

function defaultCronJob(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  setDefault(spec, 'concurrencyPolicy', 'Allow');
  setDefault(spec, 'suspend', false);
  setDefault(spec, 'successfulJobsHistoryLimit', 3);
  setDefault(spec, 'failedJobsHistoryLimit', 1);
  const jt = obj(spec, 'jobTemplate');
  const m = obj(jt, 'metadata');
  if (!('creationTimestamp' in m)) m['creationTimestamp'] = null;
  defaultJobSpec(obj(jt, 'spec'), 'spec.jobTemplate.spec', ctx);
}

function defaultService(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  const oldSpec = isObject(ctx.old?.['spec']) ? ctx.old['spec'] : undefined;
  setDefault(spec, 'type', 'ClusterIP');
  const type = spec['type'];
  if (type !== 'ExternalName') {
    setDefault(spec, 'sessionAffinity', 'None');
    setDefault(spec, 'internalTrafficPolicy', 'Cluster');
    if (oldSpec && spec['clusterIP'] === undefined && oldSpec['clusterIP'] !== undefined) {
      spec['clusterIP'] = oldSpec['clusterIP'];
      if (spec['clusterIPs'] === undefined) spec['clusterIPs'] = oldSpec['clusterIPs'];
    }
    if (spec['clusterIP'] === undefined || spec['clusterIP'] === '')
      spec['clusterIP'] = ctx.allocateClusterIP();
    setDefault(spec, 'clusterIPs', [spec['clusterIP']]);
    if (spec['clusterIP'] !== 'None' || spec['selector'] !== undefined) {
      setDefault(spec, 'ipFamilies', ['IPv4']);
      setDefault(spec, 'ipFamilyPolicy', 'SingleStack');
    }
  }
  if (spec['sessionAffinity'] === 'ClientIP')
    setDefault(obj(obj(spec, 'sessionAffinityConfig'), 'clientIP'), 'timeoutSeconds', 10800);
  const needsNodePort =
    type === 'NodePort' || (type === 'LoadBalancer' && spec['allocateLoadBalancerNodePorts'] !== false);
  if (type === 'NodePort' || type === 'LoadBalancer') setDefault(spec, 'externalTrafficPolicy', 'Cluster');
  if (type === 'LoadBalancer') setDefault(spec, 'allocateLoadBalancerNodePorts', true);
  const oldPorts = Array.isArray(oldSpec?.['ports']) ? (oldSpec['ports'] as unknown[]) : [];
  if (Array.isArray(spec['ports']))
    for (const p of spec['ports']) {
      if (!isObject(p)) continue;
      setDefault(p, 'protocol', 'TCP');
      if (type !== 'ExternalName') setDefault(p, 'targetPort', p['port']);
      if (needsNodePort && p['nodePort'] === undefined) {
        const prev = oldPorts.find(
          (q) => isObject(q) && q['port'] === p['port'] && q['protocol'] === p['protocol'],
        );
        p['nodePort'] =
          isObject(prev) && typeof prev['nodePort'] === 'number' ? prev['nodePort'] : ctx.allocateNodePort();
      }
    }
  if (!isObject(o['status'])) o['status'] = { loadBalancer: {} };
}

function defaultSecret(o: JsonObject): void {
  setDefault(o, 'type', 'Opaque');
  const sd = o['stringData'];
  if (isObject(sd)) {
    const data = obj(o, 'data');
    for (const [k, v] of Object.entries(sd)) data[k] = Buffer.from(String(v), 'utf8').toString('base64');
  }
  delete o['stringData'];
}

function defaultNamespace(o: JsonObject): void {
  const m = obj(o, 'metadata');
  obj(m, 'labels')['kubernetes.io/metadata.name'] = m['name'];
  const spec = obj(o, 'spec');
  setDefault(spec, 'finalizers', ['kubernetes']);
  const status = obj(o, 'status');
  setDefault(status, 'phase', 'Active');
}

function defaultPod(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  defaultPodSpec(spec, 'spec', ctx);
  setDefault(spec, 'enableServiceLinks', true);
  setDefault(spec, 'serviceAccountName', 'default');
  setDefault(spec, 'serviceAccount', spec['serviceAccountName']);
  setDefault(spec, 'priority', 0);
  setDefault(spec, 'preemptionPolicy', 'PreemptLowerPriority');
  setDefault(spec, 'tolerations', [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    {
      key: 'node.kubernetes.io/unreachable',
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 300,
    },
  ]);
  const status = obj(o, 'status');
  setDefault(status, 'phase', 'Pending');
  setDefault(status, 'qosClass', 'BestEffort');
}

function defaultPvc(o: JsonObject, ctx: DefaultingContext): void {
  const spec = obj(o, 'spec');
  setDefault(spec, 'volumeMode', 'Filesystem');
  if (isObject(spec['resources'])) canonicalResources(spec['resources'], 'spec.resources', ctx);
  const status = obj(o, 'status');
  setDefault(status, 'phase', 'Pending');
}

const TIME_KEY = /(Time|Timestamp)$|^time$/;
const FRACTIONAL = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+(Z|[+-]\d\d:\d\d)$/;

/** metav1.Time has whole seconds: client-node re-serialises Dates as `…:29.000Z`. */
export function normaliseTimes(v: unknown): void {
  if (Array.isArray(v)) for (const x of v) normaliseTimes(x);
  else if (isObject(v))
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'string' && TIME_KEY.test(k)) {
        const m = FRACTIONAL.exec(x);
        if (m) v[k] = `${m[1]}${m[2]}`;
      } else normaliseTimes(x);
    }
}

export function applyDefaults(kind: string, group: string, o: JsonObject, ctx: DefaultingContext): void {
  normaliseTimes(o);
  switch (`${group}/${kind}`) {
    case 'apps/Deployment':
      return defaultDeployment(o, ctx);
    case 'apps/StatefulSet':
      return defaultStatefulSet(o, ctx);
    case 'apps/DaemonSet':
      return defaultDaemonSet(o, ctx);
    case 'apps/ReplicaSet':
    case '/ReplicationController':
      setDefault(obj(o, 'spec'), 'replicas', 1);
      return defaultTemplate(obj(o, 'spec')['template'], 'spec.template', ctx);
    case 'batch/Job':
      return defaultJob(o, ctx);
    case 'batch/CronJob':
      return defaultCronJob(o, ctx);
    case '/Service':
      return defaultService(o, ctx);
    case '/Secret':
      return defaultSecret(o);
    case '/Namespace':
      return defaultNamespace(o);
    case '/Pod':
      return defaultPod(o, ctx);
    case '/PersistentVolumeClaim':
      return defaultPvc(o, ctx);
    case '/ServiceAccount':
    case '/ConfigMap':
    default:
      return;
  }
}
