import { getPath, isObject, str, type JsonObject } from '../json.js';
import { type ResourceType } from '../resources/resource-type.js';

/**
 * `meta.k8s.io/v1` Table responses for `kubectl get` (§1.5), with the columns a real cluster prints
 * for the common kinds; other kinds get NAME and AGE.
 */
type Cell = string | number;
interface Column {
  name: string;
  type: 'string' | 'integer' | 'date';
  priority?: number;
  cell: (o: JsonObject, now: number) => Cell;
}

/** k8s.io/apimachinery duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  const y = Math.floor(d / 365);
  return d % 365 === 0 || y >= 8 ? `${y}y` : `${y}y${d % 365}d`;
}

const n = (v: unknown): number => (typeof v === 'number' ? v : 0);
const at = (o: JsonObject, ...path: string[]): unknown => getPath(o, path);
const age: Column = {
  name: 'Age',
  type: 'string',
  cell: (o, now) => {
    const t = Date.parse(str(at(o, 'metadata', 'creationTimestamp')));
    return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
  },
};
const name: Column = { name: 'Name', type: 'string', cell: (o) => str(at(o, 'metadata', 'name')) };

function containers(o: JsonObject, path: string[]): JsonObject[] {
  const cs = getPath(o, path);
  return Array.isArray(cs) ? cs.filter(isObject) : [];
}

function podStatus(o: JsonObject): string {
  if (at(o, 'metadata', 'deletionTimestamp') !== undefined) return 'Terminating';
  for (const cs of containers(o, ['status', 'containerStatuses'])) {
    const waiting = getPath(cs, ['state', 'waiting', 'reason']);
    if (typeof waiting === 'string' && waiting) return waiting;
    const terminated = getPath(cs, ['state', 'terminated', 'reason']);
    if (typeof terminated === 'string' && terminated) return terminated;
  }
  return str(at(o, 'status', 'phase')) || 'Pending';
}

function servicePorts(o: JsonObject): string {
  const ports = containers(o, ['spec', 'ports']);
  if (!ports.length) return '<none>';
  return ports
    .map(
      (p) =>
        `${str(p['port'])}${p['nodePort'] ? `:${str(p['nodePort'])}` : ''}/${str(p['protocol'] ?? 'TCP')}`,
    )
    .join(',');
}

function externalIp(o: JsonObject): string {
  const type = at(o, 'spec', 'type');
  const ingress = at(o, 'status', 'loadBalancer', 'ingress');
  if (type === 'LoadBalancer') {
    const ips = Array.isArray(ingress)
      ? ingress.filter(isObject).map((i) => str(i['ip'] ?? i['hostname']))
      : [];
    return ips.length ? ips.join(',') : '<pending>';
  }
  if (type === 'ExternalName') return str(at(o, 'spec', 'externalName'));
  return '<none>';
}

function selector(o: JsonObject): string {
  const ml = at(o, 'spec', 'selector', 'matchLabels') ?? at(o, 'spec', 'selector');
  if (!isObject(ml) || Object.keys(ml).length === 0) return '<none>';
  return Object.entries(ml)
    .map(([k, v]) => `${k}=${str(v)}`)
    .join(',');
}

function jobStatus(o: JsonObject): string {
  const conds = containers(o, ['status', 'conditions']);
  if (conds.some((c) => c['type'] === 'Complete' && c['status'] === 'True')) return 'Complete';
  if (conds.some((c) => c['type'] === 'Failed' && c['status'] === 'True')) return 'Failed';
  if (conds.some((c) => c['type'] === 'Suspended' && c['status'] === 'True')) return 'Suspended';
  return 'Running';
}

const COLUMNS: Record<string, Column[]> = {
  '/Pod': [
    name,
    {
      name: 'Ready',
      type: 'string',
      cell: (o) => {
        const cs = containers(o, ['status', 'containerStatuses']);
        return `${cs.filter((c) => c['ready'] === true).length}/${containers(o, ['spec', 'containers']).length}`;
      },
    },
    { name: 'Status', type: 'string', cell: podStatus },
    {
      name: 'Restarts',
      type: 'string',
      cell: (o) =>
        String(containers(o, ['status', 'containerStatuses']).reduce((s, c) => s + n(c['restartCount']), 0)),
    },
    age,
    { name: 'IP', type: 'string', priority: 1, cell: (o) => str(at(o, 'status', 'podIP')) || '<none>' },
    { name: 'Node', type: 'string', priority: 1, cell: (o) => str(at(o, 'spec', 'nodeName')) || '<none>' },
  ],
  'apps/Deployment': [
    name,
    {
      name: 'Ready',
      type: 'string',
      cell: (o) => `${n(at(o, 'status', 'readyReplicas'))}/${n(at(o, 'spec', 'replicas'))}`,
    },
    { name: 'Up-to-date', type: 'integer', cell: (o) => n(at(o, 'status', 'updatedReplicas')) },
    { name: 'Available', type: 'integer', cell: (o) => n(at(o, 'status', 'availableReplicas')) },
    age,
    {
      name: 'Containers',
      type: 'string',
      priority: 1,
      cell: (o) =>
        containers(o, ['spec', 'template', 'spec', 'containers'])
          .map((c) => str(c['name']))
          .join(','),
    },
    {
      name: 'Images',
      type: 'string',
      priority: 1,
      cell: (o) =>
        containers(o, ['spec', 'template', 'spec', 'containers'])
          .map((c) => str(c['image']))
          .join(','),
    },
    { name: 'Selector', type: 'string', priority: 1, cell: selector },
  ],
  'apps/ReplicaSet': [
    name,
    { name: 'Desired', type: 'integer', cell: (o) => n(at(o, 'spec', 'replicas')) },
    { name: 'Current', type: 'integer', cell: (o) => n(at(o, 'status', 'replicas')) },
    { name: 'Ready', type: 'integer', cell: (o) => n(at(o, 'status', 'readyReplicas')) },
    age,
  ],
  'apps/StatefulSet': [
    name,
    {
      name: 'Ready',
      type: 'string',
      cell: (o) => `${n(at(o, 'status', 'readyReplicas'))}/${n(at(o, 'spec', 'replicas'))}`,
    },
    age,
  ],
  'apps/DaemonSet': [
    name,
    { name: 'Desired', type: 'integer', cell: (o) => n(at(o, 'status', 'desiredNumberScheduled')) },
    { name: 'Current', type: 'integer', cell: (o) => n(at(o, 'status', 'currentNumberScheduled')) },
    { name: 'Ready', type: 'integer', cell: (o) => n(at(o, 'status', 'numberReady')) },
    { name: 'Up-to-date', type: 'integer', cell: (o) => n(at(o, 'status', 'updatedNumberScheduled')) },
    { name: 'Available', type: 'integer', cell: (o) => n(at(o, 'status', 'numberAvailable')) },
    {
      name: 'Node Selector',
      type: 'string',
      cell: (o) => {
        const ns = at(o, 'spec', 'template', 'spec', 'nodeSelector');
        return isObject(ns)
          ? Object.entries(ns)
              .map(([k, v]) => `${k}=${str(v)}`)
              .join(',')
          : '<none>';
      },
    },
    age,
  ],
  'batch/Job': [
    name,
    { name: 'Status', type: 'string', cell: jobStatus },
    {
      name: 'Completions',
      type: 'string',
      cell: (o) => `${n(at(o, 'status', 'succeeded'))}/${n(at(o, 'spec', 'completions')) || 1}`,
    },
    {
      name: 'Duration',
      type: 'string',
      cell: (o, now) => {
        const start = Date.parse(str(at(o, 'status', 'startTime')));
        const end = Date.parse(str(at(o, 'status', 'completionTime')));
        return Number.isNaN(start) ? '' : humanDuration((Number.isNaN(end) ? now : end) - start);
      },
    },
    age,
  ],
  '/Service': [
    name,
    { name: 'Type', type: 'string', cell: (o) => str(at(o, 'spec', 'type')) },
    { name: 'Cluster-IP', type: 'string', cell: (o) => str(at(o, 'spec', 'clusterIP')) || '<none>' },
    { name: 'External-IP', type: 'string', cell: externalIp },
    { name: 'Port(s)', type: 'string', cell: servicePorts },
    age,
    { name: 'Selector', type: 'string', priority: 1, cell: selector },
  ],
  '/Namespace': [name, { name: 'Status', type: 'string', cell: (o) => str(at(o, 'status', 'phase')) }, age],
  '/ConfigMap': [
    name,
    {
      name: 'Data',
      type: 'integer',
      cell: (o) => Object.keys({ ...(at(o, 'data') as object), ...(at(o, 'binaryData') as object) }).length,
    },
    age,
  ],
  '/Secret': [
    name,
    { name: 'Type', type: 'string', cell: (o) => str(at(o, 'type')) },
    {
      name: 'Data',
      type: 'integer',
      cell: (o) => Object.keys((at(o, 'data') as object | undefined) ?? {}).length,
    },
    age,
  ],
  'apiextensions.k8s.io/CustomResourceDefinition': [
    name,
    { name: 'Created At', type: 'date', cell: (o) => str(at(o, 'metadata', 'creationTimestamp')) },
  ],
};

/** True when the Accept header asks for a Table (kubectl get does; -o json/yaml does not). */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => {
    const params = part.split(';').map((p) => p.trim());
    return params.includes('as=Table') && params.includes('g=meta.k8s.io') && params.includes('v=v1');
  });
}

export function toTable(
  rt: ResourceType,
  items: JsonObject[],
  resourceVersion: string,
  now: number,
  includeObject: string | null,
): object {
  const columns = (!rt.custom && COLUMNS[`${rt.group}/${rt.kind}`]) || [name, age];
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.name === 'Name' ? 'name' : '',
      description:
        c.name === 'Name' ? 'Name must be unique within a namespace.' : `${c.name} of the ${rt.kind}.`,
      priority: c.priority ?? 0,
    })),
    rows: items.map((o) => {
      const row: JsonObject = { cells: columns.map((c) => c.cell(o, now)) };
      if (includeObject === 'Object') row['object'] = { apiVersion: o['apiVersion'], kind: o['kind'], ...o };
      else if (includeObject !== 'None')
        row['object'] = {
          kind: 'PartialObjectMetadata',
          apiVersion: 'meta.k8s.io/v1',
          metadata: o['metadata'],
        };
      return row;
    }),
  };
}
