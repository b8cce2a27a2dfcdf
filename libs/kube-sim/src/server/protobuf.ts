import { badRequest, unsupportedMediaType } from '../errors.js';
import { type JsonObject } from '../json.js';

/**
 * Decodes the Kubernetes protobuf envelope (`k8s\0` + runtime.Unknown) for the kinds kubectl's
 * generators POST as protobuf (`kubectl create namespace|configmap|secret|deployment|service|
 * serviceaccount|job|cronjob`, §0.4), into the same JSON the rest of the server handles. Field
 * numbers come from the k8s.io/api `generated.proto` files; unknown fields are skipped.
 */
type Kind =
  | 'string'
  | 'int'
  | 'bool'
  | 'bytes'
  | 'time'
  | 'map'
  | 'mapBytes'
  | 'mapQuantity'
  | 'quantity'
  | 'intOrString'
  | Schema;
type Field = [name: string, kind: Kind, repeated?: boolean];
interface Schema {
  [num: number]: Field;
}

/** Pointer fields: encoded only when set, so a zero value there was meant. */
const POINTER_FIELDS = new Set([
  'replicas',
  'parallelism',
  'completions',
  'backoffLimit',
  'activeDeadlineSeconds',
  'terminationGracePeriodSeconds',
  'progressDeadlineSeconds',
  'revisionHistoryLimit',
  'suspend',
  'immutable',
  'automountServiceAccountToken',
  'manualSelector',
  'startingDeadlineSeconds',
  'successfulJobsHistoryLimit',
  'failedJobsHistoryLimit',
]);

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

const LABEL_SELECTOR: Schema = {
  1: ['matchLabels', 'map'],
  2: [
    'matchExpressions',
    { 1: ['key', 'string'], 2: ['operator', 'string'], 3: ['values', 'string', true] },
    true,
  ],
};
const OWNER_REF: Schema = {
  1: ['kind', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['controller', 'bool'],
  7: ['blockOwnerDeletion', 'bool'],
};
const OBJECT_META: Schema = {
  1: ['name', 'string'],
  2: ['generateName', 'string'],
  3: ['namespace', 'string'],
  5: ['uid', 'string'],
  6: ['resourceVersion', 'string'],
  7: ['generation', 'int'],
  11: ['labels', 'map'],
  12: ['annotations', 'map'],
  13: ['ownerReferences', OWNER_REF, true],
  14: ['finalizers', 'string', true],
};
const CONTAINER_PORT: Schema = {
  1: ['name', 'string'],
  2: ['hostPort', 'int'],
  3: ['containerPort', 'int'],
  4: ['protocol', 'string'],
  5: ['hostIP', 'string'],
};
const ENV_VAR: Schema = { 1: ['name', 'string'], 2: ['value', 'string'] };
const CONTAINER: Schema = {
  1: ['name', 'string'],
  2: ['image', 'string'],
  3: ['command', 'string', true],
  4: ['args', 'string', true],
  5: ['workingDir', 'string'],
  6: ['ports', CONTAINER_PORT, true],
  7: ['env', ENV_VAR, true],
  8: ['resources', { 1: ['limits', 'mapQuantity'], 2: ['requests', 'mapQuantity'] }],
  9: [
    'volumeMounts',
    { 1: ['name', 'string'], 2: ['readOnly', 'bool'], 3: ['mountPath', 'string'], 4: ['subPath', 'string'] },
    true,
  ],
  13: ['terminationMessagePath', 'string'],
  14: ['imagePullPolicy', 'string'],
  16: ['stdin', 'bool'],
  17: ['stdinOnce', 'bool'],
  18: ['tty', 'bool'],
  20: ['terminationMessagePolicy', 'string'],
};
const POD_SPEC: Schema = {
  2: ['containers', CONTAINER, true],
  3: ['restartPolicy', 'string'],
  4: ['terminationGracePeriodSeconds', 'int'],
  5: ['activeDeadlineSeconds', 'int'],
  6: ['dnsPolicy', 'string'],
  7: ['nodeSelector', 'map'],
  8: ['serviceAccountName', 'string'],
  10: ['nodeName', 'string'],
  14: ['securityContext', {}],
  19: ['schedulerName', 'string'],
  20: ['initContainers', CONTAINER, true],
};
const POD_TEMPLATE: Schema = { 1: ['metadata', OBJECT_META], 2: ['spec', POD_SPEC] };
const JOB_SPEC: Schema = {
  1: ['parallelism', 'int'],
  2: ['completions', 'int'],
  3: ['activeDeadlineSeconds', 'int'],
  4: ['selector', LABEL_SELECTOR],
  5: ['manualSelector', 'bool'],
  6: ['template', POD_TEMPLATE],
  7: ['backoffLimit', 'int'],
};

const KINDS: Record<string, Schema> = {
  // Review requests (kubectl auth can-i / whoami): only their kind matters to the simulator.
  'authorization.k8s.io/v1/SelfSubjectAccessReview': { 1: ['metadata', OBJECT_META] },
  'authorization.k8s.io/v1/SelfSubjectRulesReview': { 1: ['metadata', OBJECT_META] },
  'authorization.k8s.io/v1/SubjectAccessReview': { 1: ['metadata', OBJECT_META] },
  'authentication.k8s.io/v1/SelfSubjectReview': { 1: ['metadata', OBJECT_META] },
  'v1/Namespace': {
    1: ['metadata', OBJECT_META],
    2: ['spec', { 1: ['finalizers', 'string', true] }],
    3: ['status', { 1: ['phase', 'string'] }],
  },
  'v1/ConfigMap': {
    1: ['metadata', OBJECT_META],
    2: ['data', 'map'],
    3: ['binaryData', 'mapBytes'],
    4: ['immutable', 'bool'],
  },
  'v1/Secret': {
    1: ['metadata', OBJECT_META],
    2: ['data', 'mapBytes'],
    3: ['type', 'string'],
    4: ['stringData', 'map'],
    5: ['immutable', 'bool'],
  },
  'v1/ServiceAccount': {
    1: ['metadata', OBJECT_META],
    3: ['imagePullSecrets', { 1: ['name', 'string'] }, true],
    4: ['automountServiceAccountToken', 'bool'],
  },
  'v1/Service': {
    1: ['metadata', OBJECT_META],
    2: [
      'spec',
      {
        1: [
          'ports',
          {
            1: ['name', 'string'],
            2: ['protocol', 'string'],
            3: ['port', 'int'],
            4: ['targetPort', 'intOrString'],
            5: ['nodePort', 'int'],
          },
          true,
        ],
        2: ['selector', 'map'],
        3: ['clusterIP', 'string'],
        4: ['type', 'string'],
        7: ['sessionAffinity', 'string'],
        11: ['externalName', 'string'],
      },
    ],
  },
  'v1/Pod': { 1: ['metadata', OBJECT_META], 2: ['spec', POD_SPEC] },
  'apps/v1/Deployment': {
    1: ['metadata', OBJECT_META],
    2: [
      'spec',
      {
        1: ['replicas', 'int'],
        2: ['selector', LABEL_SELECTOR],
        3: ['template', POD_TEMPLATE],
        4: [
          'strategy',
          {
            1: ['type', 'string'],
            2: ['rollingUpdate', { 1: ['maxUnavailable', 'intOrString'], 2: ['maxSurge', 'intOrString'] }],
          },
        ],
        5: ['minReadySeconds', 'int'],
        6: ['revisionHistoryLimit', 'int'],
        7: ['paused', 'bool'],
        9: ['progressDeadlineSeconds', 'int'],
      },
    ],
  },
  'batch/v1/Job': { 1: ['metadata', OBJECT_META], 2: ['spec', JOB_SPEC] },
  'batch/v1/CronJob': {
    1: ['metadata', OBJECT_META],
    2: [
      'spec',
      {
        1: ['schedule', 'string'],
        2: ['startingDeadlineSeconds', 'int'],
        3: ['concurrencyPolicy', 'string'],
        4: ['suspend', 'bool'],
        5: ['jobTemplate', { 1: ['metadata', OBJECT_META], 2: ['spec', JOB_SPEC] }],
        6: ['successfulJobsHistoryLimit', 'int'],
        7: ['failedJobsHistoryLimit', 'int'],
        8: ['timeZone', 'string'],
      },
    ],
  },
};

interface RawField {
  num: number;
  wire: number;
  value: bigint | Buffer;
}

function readVarint(buf: Buffer, pos: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw badRequest('protobuf: truncated varint');
    const b = buf[pos++]!;
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7n;
  }
}

function fields(buf: Buffer): RawField[] {
  const out: RawField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [tag, p1] = readVarint(buf, pos);
    pos = p1;
    const num = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (wire === 0) {
      const [v, p2] = readVarint(buf, pos);
      out.push({ num, wire, value: v });
      pos = p2;
    } else if (wire === 2) {
      const [len, p2] = readVarint(buf, pos);
      const end = p2 + Number(len);
      if (end > buf.length) throw badRequest('protobuf: truncated field');
      out.push({ num, wire, value: buf.subarray(p2, end) });
      pos = end;
    } else if (wire === 1) {
      out.push({ num, wire, value: buf.subarray(pos, pos + 8) });
      pos += 8;
    } else if (wire === 5) {
      out.push({ num, wire, value: buf.subarray(pos, pos + 4) });
      pos += 4;
    } else throw badRequest(`protobuf: unsupported wire type ${wire}`);
  }
  return out;
}

function asBuffer(v: bigint | Buffer): Buffer {
  return Buffer.isBuffer(v) ? v : Buffer.alloc(0);
}

function asInt(v: bigint | Buffer): number {
  return typeof v === 'bigint' ? Number(BigInt.asIntN(64, v)) : 0;
}

function mapEntry(buf: Buffer, value: (b: Buffer) => unknown): [string, unknown] {
  let key = '';
  let val: unknown = '';
  for (const f of fields(buf)) {
    if (f.num === 1) key = asBuffer(f.value).toString('utf8');
    if (f.num === 2) val = value(asBuffer(f.value));
  }
  return [key, val];
}

function decodeValue(kind: Kind, v: bigint | Buffer): unknown {
  switch (kind) {
    case 'string':
      return asBuffer(v).toString('utf8');
    case 'int':
      return asInt(v);
    case 'bool':
      return asInt(v) !== 0;
    case 'bytes':
      return asBuffer(v).toString('base64');
    case 'quantity':
      return decodeMessage(asBuffer(v), { 1: ['string', 'string'] })['string'] ?? '0';
    case 'time':
      return undefined;
    case 'intOrString': {
      const m = decodeMessage(asBuffer(v), {
        1: ['isString', 'int'],
        2: ['intVal', 'int'],
        3: ['strVal', 'string'],
      });
      return m['isString'] === 1 ? (m['strVal'] ?? '') : (m['intVal'] ?? 0);
    }
    case 'map':
    case 'mapBytes':
    case 'mapQuantity':
      return undefined;
    default:
      return decodeMessage(asBuffer(v), kind);
  }
}

function decodeMessage(buf: Buffer, schema: Schema): JsonObject {
  const out: JsonObject = {};
  for (const f of fields(buf)) {
    const field = schema[f.num];
    if (!field) continue;
    const [name, kind, repeated] = field;
    if (kind === 'map' || kind === 'mapBytes' || kind === 'mapQuantity') {
      const decodeVal = (b: Buffer): unknown =>
        kind === 'map'
          ? b.toString('utf8')
          : kind === 'mapBytes'
            ? b.toString('base64')
            : decodeValue('quantity', b);
      const [k, val] = mapEntry(asBuffer(f.value), decodeVal);
      const m = (out[name] ?? {}) as JsonObject;
      m[k] = val;
      out[name] = m;
      continue;
    }
    const value = decodeValue(kind, f.value);
    if (value === undefined) continue;
    // Go encodes every non-pointer field, zero or not; JSON would have omitted those (omitempty).
    if (!repeated && (value === '' || value === false || value === 0) && !POINTER_FIELDS.has(name)) continue;
    if (repeated) {
      const list = (out[name] ?? []) as unknown[];
      list.push(value);
      out[name] = list;
    } else out[name] = value;
  }
  return out;
}

export function protobufToJson(raw: Buffer): unknown {
  if (raw.length < 4 || !raw.subarray(0, 4).equals(MAGIC))
    throw badRequest('protobuf: missing the k8s envelope prefix');
  const unknown = decodeMessage(raw.subarray(4), {
    1: ['typeMeta', { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] }],
    2: ['raw', 'bytes'],
  });
  const typeMeta = (unknown['typeMeta'] ?? {}) as JsonObject;
  const apiVersion = typeof typeMeta['apiVersion'] === 'string' ? typeMeta['apiVersion'] : '';
  const kind = typeof typeMeta['kind'] === 'string' ? typeMeta['kind'] : '';
  const schema = KINDS[`${apiVersion}/${kind}`];
  if (!schema) throw unsupportedMediaType(`application/vnd.kubernetes.protobuf (${apiVersion} ${kind})`);
  const body = Buffer.from(typeof unknown['raw'] === 'string' ? unknown['raw'] : '', 'base64');
  return { apiVersion, kind, ...decodeMessage(body, schema) };
}
