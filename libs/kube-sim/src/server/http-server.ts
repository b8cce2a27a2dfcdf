import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';
import {
  type ClusterApi,
  PATCH_CONTENT_TYPES,
  type DeleteOptions,
  type PatchType,
} from '../api/cluster-api.js';
import { badRequest, methodNotAllowed, notFound, StatusError, unsupportedMediaType } from '../errors.js';
import { isObject, type JsonObject, str, getPath } from '../json.js';
import { apiVersionOf, type ResourceType } from '../resources/resource-type.js';
import { parseFieldSelector, parseLabelSelector } from '../store/selectors.js';
import {
  AGGREGATED_CONTENT_TYPE,
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  VERSION_INFO,
  wantsAggregated,
} from './discovery.js';
import { groupVersionDocument, openApiRoot } from './openapi.js';
import { WatchStream } from './watch-handler.js';
import { FIELD_VALIDATIONS, type FieldValidation } from '../api/unknown-fields.js';
import { protobufToJson } from './protobuf.js';
import { toTable, wantsTable } from './table.js';

const TABLE_CONTENT_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

/** The simulator authorises everything: access reviews allow, whoami names one admin user. */
function review(rt: ResourceType, body: unknown): object {
  const o = isObject(body) ? body : {};
  const userInfo = { username: 'kube-sim-admin', groups: ['system:masters', 'system:authenticated'] };
  const status =
    rt.kind === 'SelfSubjectReview'
      ? { userInfo }
      : rt.kind === 'SelfSubjectRulesReview'
        ? {
            resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
            nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
            incomplete: false,
          }
        : { allowed: true, reason: 'kube-sim authorises every request' };
  return { ...o, apiVersion: apiVersionOf(rt), kind: rt.kind, metadata: { creationTimestamp: null }, status };
}

interface Route {
  rt: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** Failure switches for one cluster's API (tests of client retry and resume logic). */
export interface ApiFaults {
  /** Answer every request with this HTTP status (e.g. 503) until cleared. */
  failAll?: number;
  /**
   * Answer the next `times` requests (default 1) whose path is exactly `path` (and whose method is
   * `method`, when given) with `status`, after letting the first `after` (default 0) through; then
   * behave again: a transient failure of one call, such as a discovery request.
   */
  failPath?: { path: string; status: number; method?: string; times?: number; after?: number }[];
}

/**
 * The HTTP face of one simulated cluster: routing of /api and /apis paths onto ClusterApi,
 * discovery, OpenAPI and watches. JSON in and out; apply bodies may be YAML.
 */
export class ApiHttpServer {
  readonly server: Server;
  private readonly watches = new Set<WatchStream>();
  readonly faults: ApiFaults = {};
  /** TCP connections accepted since start: a client that reuses its connections keeps this low. */
  acceptedConnections = 0;
  /**
   * Every request's method, path and query, in arrival order, once a test sets it to an array
   * (undefined: nothing kept): what a client asked of the cluster, to hold against its RBAC.
   */
  requestLog:
    { method: string; path: string; query: string; userAgent: string; impersonate: string }[] | undefined;

  constructor(
    private readonly api: ClusterApi,
    /** What `/version` answers (default: kube-sim's own version). */
    private readonly version: typeof VERSION_INFO = VERSION_INFO,
  ) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.fail(res, err));
    });
    this.server.keepAliveTimeout = 5_000;
    this.server.on('connection', () => {
      this.acceptedConnections++;
    });
  }

  listen(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve((this.server.address() as AddressInfo).port);
      });
    });
  }

  /** Closes every open watch from the server side; clients reconnect from their last resourceVersion. */
  closeWatches(): number {
    const n = this.watches.size;
    for (const w of [...this.watches]) w.close();
    return n;
  }

  get openWatches(): number {
    return this.watches.size;
  }

  async close(): Promise<void> {
    this.closeWatches();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private send(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof StatusError) return this.send(res, err.code, err.toStatus());
    const message = err instanceof Error ? err.message : str(err);
    this.send(res, 500, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason: 'InternalError',
      code: 500,
    });
  }

  private async body(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  private decode(raw: Buffer, contentType: string, yamlAllowed: boolean): unknown {
    if (contentType.startsWith('application/vnd.kubernetes.protobuf')) return protobufToJson(raw);
    const text = raw.toString('utf8');
    if (!text.trim()) throw badRequest('the request body is empty');
    try {
      return JSON.parse(text) as unknown;
    } catch {
      if (!yamlAllowed && !contentType.includes('yaml'))
        throw badRequest(`the request body is not valid JSON`);
      try {
        return parseYaml(text) as unknown;
      } catch (err) {
        throw badRequest(`error decoding YAML: ${err instanceof Error ? err.message : str(err)}`);
      }
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const q = url.searchParams;
    const method = req.method ?? 'GET';
    this.requestLog?.push({
      method,
      path,
      query: url.search,
      userAgent: req.headers['user-agent'] ?? '',
      // Who the client asked to act as (kube-sim authorises nothing; a test checks the header).
      impersonate: String(req.headers['impersonate-user'] ?? ''),
    });
    if (this.faults.failAll) {
      await this.body(req);
      throw new StatusError(
        this.faults.failAll,
        'InternalError',
        `simulated failure (HTTP ${this.faults.failAll})`,
      );
    }
    const once = this.faults.failPath?.find(
      (f) => f.path === path && (f.method ?? method) === method && (f.times ?? 1) > 0,
    );
    if (once && (once.after ?? 0) > 0) {
      once.after = (once.after ?? 0) - 1;
    } else if (once) {
      once.times = (once.times ?? 1) - 1;
      await this.body(req);
      throw new StatusError(
        once.status,
        'InternalError',
        `simulated failure of ${path} (HTTP ${once.status})`,
      );
    }
    const reg = this.api.registry;
    if (path === '/version') return this.send(res, 200, this.version);
    if (path === '/healthz' || path === '/readyz' || path === '/livez') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('ok');
      return;
    }
    const aggregated = wantsAggregated(req.headers.accept);
    if (path === '/api')
      return aggregated
        ? this.send(res, 200, aggregatedDiscovery(reg, true), AGGREGATED_CONTENT_TYPE)
        : this.send(res, 200, apiVersions(req.headers.host ?? '127.0.0.1'));
    if (path === '/apis')
      return aggregated
        ? this.send(res, 200, aggregatedDiscovery(reg, false), AGGREGATED_CONTENT_TYPE)
        : this.send(res, 200, apiGroupList(reg));
    if (path === '/openapi/v3') return this.send(res, 200, openApiRoot(reg));
    if (path.startsWith('/openapi/v3/')) {
      const parts = path.slice('/openapi/v3/'.length).split('/');
      const doc =
        parts[0] === 'api'
          ? groupVersionDocument(reg, '', parts[1] ?? '')
          : groupVersionDocument(reg, parts[1] ?? '', parts[2] ?? '');
      if (!doc) throw notFound('', '', path);
      return this.send(res, 200, doc);
    }
    const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
    let group: string;
    let version: string;
    let rest: string[];
    if (segs[0] === 'api') {
      group = '';
      version = segs[1] ?? '';
      rest = segs.slice(2);
    } else if (segs[0] === 'apis') {
      group = segs[1] ?? '';
      version = segs[2] ?? '';
      rest = segs.slice(3);
      if (segs.length === 2) {
        const g = apiGroup(reg, group);
        if (!g) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
        return this.send(res, 200, g);
      }
    } else throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    if (rest.length === 0) {
      const list = apiResourceList(reg, group, version);
      if (!list) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
      return this.send(res, 200, list);
    }
    const route = this.route(group, version, rest);
    return this.dispatch(req, res, method, route, q);
  }

  private route(group: string, version: string, rest: string[]): Route {
    const reg = this.api.registry;
    const nsRt = reg.lookup('', 'v1', 'namespaces')!;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      const rt = reg.lookup(group, version, rest[2]!);
      if (rt && rt.namespaced) return { rt, namespace: rest[1], name: rest[3], subresource: rest[4] };
      if (group === '' && (rest[2] === 'status' || rest[2] === 'finalize') && rest.length === 3)
        return { rt: nsRt, name: rest[1], subresource: rest[2] };
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    }
    const rt = reg.lookup(group, version, rest[0]!);
    if (!rt) throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    return { rt, name: rest[1], subresource: rest[2] };
  }

  private fieldValidation(q: URLSearchParams): FieldValidation | undefined {
    const value = q.get('fieldValidation');
    if (value === null || value === '') return undefined;
    if (!(FIELD_VALIDATIONS as readonly string[]).includes(value))
      throw badRequest(
        `fieldValidation: Unsupported value: "${value}": supported values: ${FIELD_VALIDATIONS.map((v) => `"${v}"`).join(', ')}`,
      );
    return value as FieldValidation;
  }

  private manager(req: IncomingMessage, q: URLSearchParams): string {
    const explicit = q.get('fieldManager');
    if (explicit) return explicit;
    const ua = req.headers['user-agent'];
    return ua ? (ua.split('/')[0] ?? 'unknown') : 'unknown';
  }

  /**
   * Strips apiVersion/kind from built-in list items, as the real apiserver does. Items are the
   * store's read-only snapshots, so each gets a shallow copy without those two keys.
   */
  private listBody(rt: ResourceType, items: JsonObject[], resourceVersion: string): object {
    const out = rt.custom ? items : items.map(({ apiVersion: _apiVersion, kind: _kind, ...rest }) => rest);
    return { kind: rt.listKind, apiVersion: apiVersionOf(rt), metadata: { resourceVersion }, items: out };
  }

  private async dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    r: Route,
    q: URLSearchParams,
  ) {
    const { rt } = r;
    const ns = r.namespace ?? '';
    const dryRun = q.getAll('dryRun').includes('All');
    const validation = {
      fieldValidation: this.fieldValidation(q),
      // RFC 7234 warn-code 299, as the apiserver sends them (client-node and kubectl print these).
      warn: (message: string) => res.appendHeader('Warning', `299 - ${JSON.stringify(message)}`),
    };
    const api = this.api;
    const contentType = (req.headers['content-type'] ?? 'application/json')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (
      r.subresource === 'log' &&
      !rt.custom &&
      rt.kind === 'Pod' &&
      method === 'GET' &&
      r.name !== undefined
    )
      return this.sendLog(res, api.get(rt, ns, r.name), q.get('container'));
    if (r.subresource && !['status', 'scale', 'finalize'].includes(r.subresource))
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    if (r.subresource === 'status' && !rt.hasStatus)
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
    if (r.subresource === 'scale' && !rt.hasScale)
      throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');

    if (r.name === undefined) {
      if (rt.namespaced && r.namespace !== undefined && method === 'POST') {
        // fall through to create
      } else if (!rt.namespaced && method === 'POST') {
        // cluster-scoped create
      }
      switch (method) {
        case 'GET': {
          const labelSelector = q.get('labelSelector');
          const fieldSelector = q.get('fieldSelector');
          if (q.get('watch') === 'true' || q.get('watch') === '1') {
            const timeout = q.get('timeoutSeconds');
            const w = new WatchStream(
              api.store,
              {
                rt,
                namespace: r.namespace,
                resourceVersion: q.get('resourceVersion') ?? undefined,
                timeoutSeconds: timeout ? Number(timeout) : undefined,
                allowBookmarks: q.get('allowWatchBookmarks') === 'true',
                sendInitialEvents: q.get('sendInitialEvents') === 'true',
                labels: parseLabelSelector(labelSelector),
                fields: parseFieldSelector(fieldSelector, rt.kind, rt.custom),
                filtered: Boolean(labelSelector || fieldSelector),
              },
              res,
              (s) => this.watches.delete(s),
            );
            this.watches.add(w);
            w.start();
            return;
          }
          const { items, resourceVersion } = api.list(rt, r.namespace, { labelSelector, fieldSelector });
          if (wantsTable(req.headers.accept))
            return this.send(
              res,
              200,
              toTable(rt, items, resourceVersion, api.clock.now(), q.get('includeObject')),
              TABLE_CONTENT_TYPE,
            );
          return this.send(res, 200, this.listBody(rt, items, resourceVersion));
        }
        case 'POST': {
          if (rt.namespaced && r.namespace === undefined) throw methodNotAllowed();
          const body = this.decode(await this.body(req), contentType, false);
          if (rt.review) return this.send(res, 201, review(rt, body));
          const created = api.create(rt, ns, body, { manager: this.manager(req, q), dryRun, ...validation });
          return this.send(res, 201, created);
        }
        case 'DELETE': {
          const opts = this.deleteOptions(await this.body(req), q);
          const { items } = api.list(rt, r.namespace, {
            labelSelector: q.get('labelSelector'),
            fieldSelector: q.get('fieldSelector'),
          });
          const out: JsonObject[] = [];
          for (const i of items) {
            const m = i['metadata'] as JsonObject;
            out.push(api.delete(rt, str(m['namespace'] ?? ''), str(m['name']), opts).object);
          }
          return this.send(res, 200, this.listBody(rt, out, str(api.store.resourceVersion)));
        }
        default:
          throw methodNotAllowed();
      }
    }

    const name = r.name;
    if (r.subresource === 'scale') {
      switch (method) {
        case 'GET':
          return this.send(res, 200, api.getScale(rt, ns, name));
        case 'PUT': {
          const body = this.decode(await this.body(req), contentType, false);
          return this.send(
            res,
            200,
            api.writeScale(
              rt,
              ns,
              name,
              { put: body },
              { manager: this.manager(req, q), dryRun, ...validation },
            ),
          );
        }
        case 'PATCH': {
          const type = this.patchType(contentType);
          const body = this.decode(await this.body(req), contentType, type === 'apply');
          if (type === 'apply') {
            const spec = isObject(body) ? body['spec'] : undefined;
            return this.send(
              res,
              200,
              api.writeScale(
                rt,
                ns,
                name,
                { patch: { type: 'merge', body: { spec } } },
                { manager: this.manager(req, q), dryRun, ...validation },
              ),
            );
          }
          return this.send(
            res,
            200,
            api.writeScale(
              rt,
              ns,
              name,
              { patch: { type, body } },
              { manager: this.manager(req, q), dryRun, ...validation },
            ),
          );
        }
        default:
          throw methodNotAllowed();
      }
    }
    const subresource = r.subresource === 'status' ? 'status' : undefined;
    switch (method) {
      case 'GET': {
        const o = api.get(rt, ns, name);
        if (wantsTable(req.headers.accept))
          return this.send(
            res,
            200,
            toTable(
              rt,
              [o],
              str(getPath(o, ['metadata', 'resourceVersion'])),
              api.clock.now(),
              q.get('includeObject'),
            ),
            TABLE_CONTENT_TYPE,
          );
        return this.send(res, 200, o);
      }
      case 'PUT': {
        const body = this.decode(await this.body(req), contentType, false);
        if (r.subresource === 'finalize') {
          const spec = isObject(body) && isObject(body['spec']) ? body['spec'] : {};
          const current = api.get(rt, ns, name);
          return this.send(
            res,
            200,
            api.update(
              rt,
              ns,
              name,
              { ...current, spec },
              { manager: this.manager(req, q), dryRun, ...validation },
            ),
          );
        }
        return this.send(
          res,
          200,
          api.update(rt, ns, name, body, {
            manager: this.manager(req, q),
            dryRun,
            subresource,
            ...validation,
          }),
        );
      }
      case 'PATCH': {
        const type = this.patchType(contentType);
        const body = this.decode(await this.body(req), contentType, type === 'apply');
        const force = q.get('force');
        const result = api.patch(rt, ns, name, type, body, {
          manager: type === 'apply' ? (q.get('fieldManager') ?? '') : this.manager(req, q),
          dryRun,
          subresource,
          ...validation,
          ...(force === null ? {} : { force: force === 'true' }),
        });
        return this.send(res, result.created ? 201 : 200, result.object);
      }
      case 'DELETE': {
        const opts = this.deleteOptions(await this.body(req), q);
        const { object, gone } = api.delete(rt, ns, name, opts);
        if (gone && !rt.deleteReturnsObject) {
          const m = object['metadata'] as JsonObject;
          return this.send(res, 200, {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Success',
            details: { name, group: rt.group, kind: rt.plural, uid: m['uid'] },
          });
        }
        return this.send(res, 200, object);
      }
      default:
        throw methodNotAllowed();
    }
  }

  /** `kubectl logs`: simulated containers write a line when they start (and crash, when they crash-loop). */
  private sendLog(res: ServerResponse, pod: JsonObject, container: string | null): void {
    const spec = (pod['spec'] ?? {}) as JsonObject;
    const names = (Array.isArray(spec['containers']) ? spec['containers'] : [])
      .filter(isObject)
      .map((c) => str(c['name']));
    const name = container ?? names[0] ?? '';
    const podName = str(getPath(pod, ['metadata', 'name']));
    if (!names.includes(name)) throw badRequest(`container ${name} is not valid for pod ${podName}`);
    const statuses = getPath(pod, ['status', 'containerStatuses']);
    const cs = Array.isArray(statuses)
      ? statuses.filter(isObject).find((c) => c['name'] === name)
      : undefined;
    const lines = [
      `kube-sim: container ${name} of pod ${podName} started (image ${str(cs?.['image'] ?? '')})`,
    ];
    if (getPath(cs, ['lastState', 'terminated', 'exitCode']) === 1)
      lines.push('kube-sim: simulated crash: exit status 1');
    const text = `${lines.join('\n')}\n`;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private patchType(contentType: string): PatchType {
    const t = PATCH_CONTENT_TYPES[contentType];
    if (!t) throw unsupportedMediaType(contentType);
    return t;
  }

  private deleteOptions(raw: Buffer, q: URLSearchParams): DeleteOptions {
    let body: JsonObject = {};
    if (raw.length && raw.toString('utf8').trim()) {
      const parsed = JSON.parse(raw.toString('utf8')) as unknown;
      if (isObject(parsed)) body = parsed;
    }
    const policy = (body['propagationPolicy'] ??
      q.get('propagationPolicy') ??
      undefined) as DeleteOptions['propagationPolicy'];
    const orphan =
      body['orphanDependents'] ??
      (q.get('orphanDependents') === null ? undefined : q.get('orphanDependents') === 'true');
    const dryRun = Array.isArray(body['dryRun'])
      ? body['dryRun'].includes('All')
      : q.getAll('dryRun').includes('All');
    const pre = isObject(body['preconditions']) ? body['preconditions'] : {};
    const opts: DeleteOptions = { dryRun };
    if (policy && !['Background', 'Foreground', 'Orphan'].includes(policy))
      throw badRequest(`propagationPolicy: Unsupported value: "${str(policy)}"`);
    if (policy) opts.propagationPolicy = policy;
    else if (orphan === true) opts.propagationPolicy = 'Orphan';
    else if (orphan === false) opts.propagationPolicy = 'Background';
    const preconditions: DeleteOptions['preconditions'] = {};
    if (typeof pre['uid'] === 'string') preconditions.uid = pre['uid'];
    if (typeof pre['resourceVersion'] === 'string') preconditions.resourceVersion = pre['resourceVersion'];
    if (preconditions.uid || preconditions.resourceVersion) opts.preconditions = preconditions;
    return opts;
  }
}
