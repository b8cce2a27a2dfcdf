import { isPlainObject } from './json-pointer.js';

/**
 * Fills the fields the API server defaults when a manifest leaves them out (Kubernetes
 * `pkg/apis/{apps,core}/v1/defaults.go`), so that a live object read back from a cluster and the
 * manifest it came from can be compared field by field. Mutates `obj`; only absent fields are set.
 */
export function applyServerDefaults(obj: Record<string, unknown>): void {
  const kind = obj['kind'];
  const spec = obj['spec'];
  if (kind === 'Secret') setDefault(obj, 'type', 'Opaque');
  if (!isPlainObject(spec)) return;
  switch (kind) {
    case 'Deployment':
      defaultDeployment(spec);
      break;
    case 'StatefulSet':
      setDefault(spec, 'replicas', 1);
      setDefault(spec, 'podManagementPolicy', 'OrderedReady');
      setDefault(spec, 'revisionHistoryLimit', 10);
      setDefault(spec, 'updateStrategy', { type: 'RollingUpdate', rollingUpdate: { partition: 0 } });
      setDefault(spec, 'persistentVolumeClaimRetentionPolicy', {
        whenDeleted: 'Retain',
        whenScaled: 'Retain',
      });
      defaultTemplate(spec, true);
      break;
    case 'DaemonSet':
      setDefault(spec, 'revisionHistoryLimit', 10);
      setDefault(spec, 'updateStrategy', {
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
      });
      defaultTemplate(spec, true);
      break;
    case 'ReplicaSet':
      setDefault(spec, 'replicas', 1);
      defaultTemplate(spec, true);
      break;
    case 'Job':
      // A Job must declare its restartPolicy (Never or OnFailure), so it is never defaulted.
      defaultTemplate(spec, false);
      break;
    case 'CronJob': {
      const jobTemplate = spec['jobTemplate'];
      const jobSpec = isPlainObject(jobTemplate) ? jobTemplate['spec'] : undefined;
      if (isPlainObject(jobSpec)) defaultTemplate(jobSpec, false);
      break;
    }
    case 'Pod':
      defaultPodSpec(spec, true);
      break;
    case 'Service':
      defaultService(spec);
      break;
    default:
      break;
  }
}

function setDefault(target: Record<string, unknown>, key: string, value: unknown): void {
  if (target[key] === undefined || target[key] === null) target[key] = value;
}

function defaultDeployment(spec: Record<string, unknown>): void {
  setDefault(spec, 'replicas', 1);
  setDefault(spec, 'revisionHistoryLimit', 10);
  setDefault(spec, 'progressDeadlineSeconds', 600);
  setDefault(spec, 'strategy', { type: 'RollingUpdate' });
  const strategy = spec['strategy'];
  if (isPlainObject(strategy)) {
    setDefault(strategy, 'type', 'RollingUpdate');
    if (strategy['type'] === 'RollingUpdate') {
      setDefault(strategy, 'rollingUpdate', {});
      const rolling = strategy['rollingUpdate'];
      if (isPlainObject(rolling)) {
        setDefault(rolling, 'maxSurge', '25%');
        setDefault(rolling, 'maxUnavailable', '25%');
      }
    }
  }
  defaultTemplate(spec, true);
}

function defaultTemplate(spec: Record<string, unknown>, restartAlways: boolean): void {
  const template = spec['template'];
  if (!isPlainObject(template)) return;
  const podSpec = template['spec'];
  if (isPlainObject(podSpec)) defaultPodSpec(podSpec, restartAlways);
}

function defaultPodSpec(pod: Record<string, unknown>, restartAlways: boolean): void {
  setDefault(pod, 'dnsPolicy', 'ClusterFirst');
  if (restartAlways) setDefault(pod, 'restartPolicy', 'Always');
  setDefault(pod, 'schedulerName', 'default-scheduler');
  setDefault(pod, 'securityContext', {});
  setDefault(pod, 'terminationGracePeriodSeconds', 30);
  for (const list of ['containers', 'initContainers']) {
    const containers = pod[list];
    if (!Array.isArray(containers)) continue;
    for (const c of containers) if (isPlainObject(c)) defaultContainer(c);
  }
  const volumes = pod['volumes'];
  if (Array.isArray(volumes)) for (const v of volumes) if (isPlainObject(v)) defaultVolume(v);
}

function defaultContainer(c: Record<string, unknown>): void {
  setDefault(c, 'terminationMessagePath', '/dev/termination-log');
  setDefault(c, 'terminationMessagePolicy', 'File');
  setDefault(c, 'resources', {});
  if (typeof c['image'] === 'string') setDefault(c, 'imagePullPolicy', pullPolicyFor(c['image']));
  const ports = c['ports'];
  if (Array.isArray(ports)) for (const p of ports) if (isPlainObject(p)) setDefault(p, 'protocol', 'TCP');
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const p = c[probe];
    if (!isPlainObject(p)) continue;
    setDefault(p, 'timeoutSeconds', 1);
    setDefault(p, 'periodSeconds', 10);
    setDefault(p, 'successThreshold', 1);
    setDefault(p, 'failureThreshold', 3);
    const http = p['httpGet'];
    if (isPlainObject(http)) {
      setDefault(http, 'path', '/');
      setDefault(http, 'scheme', 'HTTP');
    }
  }
  const env = c['env'];
  if (Array.isArray(env)) {
    for (const e of env) {
      const fieldRef =
        isPlainObject(e) && isPlainObject(e['valueFrom']) ? e['valueFrom']['fieldRef'] : undefined;
      if (isPlainObject(fieldRef)) setDefault(fieldRef, 'apiVersion', 'v1');
    }
  }
}

/** `Always` for `:latest` or an untagged image without digest, else `IfNotPresent` (core/v1 defaults). */
export function pullPolicyFor(image: string): string {
  if (image.includes('@')) return 'IfNotPresent';
  const lastPart = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastPart.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return lastPart.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultVolume(v: Record<string, unknown>): void {
  for (const source of ['configMap', 'secret', 'projected', 'downwardAPI']) {
    const s = v[source];
    if (isPlainObject(s)) setDefault(s, 'defaultMode', 420);
  }
  const hostPath = v['hostPath'];
  if (isPlainObject(hostPath)) setDefault(hostPath, 'type', '');
}

function defaultService(spec: Record<string, unknown>): void {
  setDefault(spec, 'type', 'ClusterIP');
  setDefault(spec, 'sessionAffinity', 'None');
  if (spec['type'] !== 'ExternalName') setDefault(spec, 'internalTrafficPolicy', 'Cluster');
  if (spec['type'] === 'NodePort' || spec['type'] === 'LoadBalancer') {
    setDefault(spec, 'externalTrafficPolicy', 'Cluster');
  }
  if (spec['sessionAffinity'] === 'ClientIP') {
    setDefault(spec, 'sessionAffinityConfig', { clientIP: { timeoutSeconds: 10800 } });
  }
  const ports = spec['ports'];
  if (!Array.isArray(ports)) return;
  for (const p of ports) {
    if (!isPlainObject(p)) continue;
    setDefault(p, 'protocol', 'TCP');
    setDefault(p, 'targetPort', p['port']);
  }
}
