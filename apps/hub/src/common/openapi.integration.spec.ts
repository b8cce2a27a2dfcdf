import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv } from 'ajv';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenAPIObject } from '@nestjs/swagger';
import { startDocumentedFleet } from '../testing/documented-fleet.js';

// The OpenAPI document against the real hub: every route Nest registers is in it with a typed
// success answer and the shared error shape, and what the hub really answers validates against
// those schemas — with ajv, and as the TypeScript types a client generates from the document.

type Fleet = Awaited<ReturnType<typeof startDocumentedFleet>>;
let fleet: Fleet;
let doc: OpenAPIObject;
/** A bundle eu-1's agent may read. */
let digest: string;

/** Routes with no typed JSON answer, and why. */
const UNDOCUMENTED: Record<string, string> = {
  'GET /metrics': 'Prometheus text format, scraped, not an API',
  'GET /api/docs-json': 'the document itself',
};
/** The Swagger UI's pages and files (served when the document is public). */
const SWAGGER_UI = /^GET \/api\/docs(-yaml|\/.*)?$/;

/** Writes whose body is not one named schema, and why. */
const UNNAMED_BODY: Record<string, string> = {
  'POST /api/agent/v1/rotate': 'no body: the credential presented is the one rotated',
  'POST /api/v1/clusters/{name}/bootstrap-tokens': 'no body',
  'POST /api/v1/clusters/{name}/revoke-credential': 'no body',
  'POST /api/v1/repositories/{id}/refresh': 'no body',
  'POST /api/v1/webhooks/git': "the Git host's push payload, verified by its signature",
  'POST /api/v1/appsets': 'an ApplicationSet document, checked by the expansion (described in words)',
  'POST /api/v1/appsets/preview': 'an ApplicationSet document, as POST /api/v1/appsets',
};

/** Read answers that cannot be asked of this hub, and why. */
const NOT_ASKED: Record<string, string> = {
  '/api/v1/auth/oidc': 'OIDC sign-in is off on the test hub (404)',
  '/api/v1/rollouts/{appSet}': 'the test appset has no rollout strategy, so no rollout (404)',
};

/** Queries a read needs; item routes name one seeded resource each. */
function askedPaths(): Record<string, string> {
  return {
    '/api/v1/explain': '/api/v1/explain?cluster=eu-1&appset=web',
    '/api/v1/operations': `/api/v1/operations?batchId=${fleet.batchId}`,
    '/api/v1/clusters/{name}': '/api/v1/clusters/eu-1',
    '/api/agent/v1/bundles/{digest}': `/api/agent/v1/bundles/${digest}`,
    '/api/v1/appsets/{name}': '/api/v1/appsets/web',
    '/api/v1/appsets/{name}/preview': '/api/v1/appsets/web/preview',
    '/api/v1/targets/{name}/diff': '/api/v1/targets/web-eu-1/diff',
    '/api/v1/targets/{name}/windows': '/api/v1/targets/web-eu-1/windows',
    '/api/v1/targets/{name}/operations': '/api/v1/targets/web-eu-1/operations',
    '/api/v1/windows/{name}': '/api/v1/windows/nightly',
    '/api/v1/windows/{name}/calendar': '/api/v1/windows/nightly/calendar',
    '/api/v1/windows/{name}/history': '/api/v1/windows/nightly/history',
    '/api/v1/projects/{name}': '/api/v1/projects/team-a',
    '/api/v1/notifications/policies/{name}': '/api/v1/notifications/policies/tell',
    '/api/v1/break-glass/{id}': `/api/v1/break-glass/${fleet.breakGlassId}`,
    '/api/v1/break-glass/{id}/record': `/api/v1/break-glass/${fleet.breakGlassId}/record`,
  };
}

/** Express's routes, as `METHOD /path/{param}`. */
function registeredRoutes(): string[] {
  const router = (fleet.hub.app.getHttpAdapter().getInstance() as { router: { stack: RouteLayer[] } }).router;
  const routes = new Set<string>();
  for (const layer of router.stack) {
    if (!layer.route) continue;
    const path = layer.route.path.replace(/:(\w+)/g, '{$1}');
    for (const [method, on] of Object.entries(layer.route.methods))
      if (on && method !== '_all') routes.add(`${method.toUpperCase()} ${path}`);
  }
  return [...routes].sort();
}
interface RouteLayer {
  route?: { path: string; methods: Record<string, boolean> };
}

type Operation = { responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> };
const operationOf = (route: string): Operation | undefined => {
  const [method, path] = route.split(' ') as [string, string];
  return (doc.paths[path] as Record<string, Operation> | undefined)?.[method.toLowerCase()];
};
const successOf = (op: Operation) =>
  Object.entries(op.responses).filter(([status]) => /^2\d\d$/.test(status) && status !== '204');

/** Every read answering JSON: its path in the document and the path asked (null: not asked). */
function jsonReads(): { path: string; asked: string }[] {
  const asked = askedPaths();
  return Object.keys(doc.paths)
    .filter((path) => {
      const json = operationOf(`GET ${path}`)?.responses['200']?.content?.['application/json'];
      return json !== undefined && !(path in NOT_ASKED) && (!path.includes('{') || path in asked);
    })
    .map((path) => ({ path, asked: asked[path] ?? path }));
}

/** A read as its caller: the agent API with eu-1's credential, the people API as the test's admin. */
const read = (asked: string) =>
  asked.startsWith('/api/agent/') ? fleet.agent('eu-1', 'GET', asked) : fleet.call('GET', asked);

/**
 * The components as plain JSON Schema for ajv: OpenAPI 3.0's `nullable` beside an `allOf` (a
 * nullable named schema) becomes "that, or null" (ajv reads `nullable` only beside a `type`), and
 * its boolean `exclusiveMinimum`/`exclusiveMaximum` the bound itself.
 */
function jsonSchemaOf(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchemaOf);
  if (node === null || typeof node !== 'object') return node;
  const { nullable, ...rest } = node as Record<string, unknown>;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, jsonSchemaOf(v)]));
  for (const [exclusive, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (out[exclusive] !== true) continue;
    out[exclusive] = out[bound];
    delete out[bound];
  }
  if (nullable === true && 'allOf' in out) {
    const { type: _type, ...schema } = out;
    return { anyOf: [schema, { type: 'null' }] };
  }
  return nullable === undefined ? out : { ...out, nullable };
}

type MediaWithExamples = { schema: { $ref: string }; examples?: Record<string, { value: unknown }> };

/** ajv with the document's components under `flotilla-openapi#/components/schemas/…`. */
function ajvOf(document: OpenAPIObject): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(
    { $id: 'flotilla-openapi', components: jsonSchemaOf(document.components) },
    'flotilla-openapi',
  );
  return ajv;
}

const answerRef = (path: string) =>
  operationOf(`GET ${path}`)!.responses['200']!.content!['application/json']!.schema!.$ref!;

describe('the OpenAPI document (real hub, PostgreSQL, Redis, Git)', () => {
  beforeAll(async () => {
    fleet = await startDocumentedFleet();
    doc = (await fleet.call<OpenAPIObject>('GET', '/api/docs-json')).body;
    const target = await fleet.call<{ bundleDigest: string }>('GET', '/api/v1/targets/web-eu-1/diff');
    digest = target.body.bundleDigest;
  }, 180_000);

  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('documents every route Nest registers: a named success answer, the shared error, its input', () => {
    const missing: string[] = [];
    for (const route of registeredRoutes()) {
      if (route in UNDOCUMENTED || SWAGGER_UI.test(route)) continue;
      const op = operationOf(route);
      if (!op) {
        missing.push(`${route}: not in the document`);
        continue;
      }
      const success = successOf(op);
      const [method] = route.split(' ');
      const bodiless = method === 'DELETE' && op.responses['204'] !== undefined;
      if (!bodiless && success.length === 0) missing.push(`${route}: no success answer`);
      for (const [status, answer] of success) {
        const schema = Object.values(answer.content ?? {})[0]?.schema;
        if (!schema?.$ref) missing.push(`${route}: ${status} has no named schema`);
      }
      const body = (op as { requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> } })
        .requestBody?.content?.['application/json']?.schema?.$ref;
      if ((method === 'POST' || method === 'PUT') && !body && !(route in UNNAMED_BODY))
        missing.push(`${route}: no named request body`);
      const error = op.responses['4XX']?.content?.['application/json']?.schema?.$ref;
      if (error !== '#/components/schemas/ApiError') missing.push(`${route}: no ApiError`);
    }
    expect(missing).toEqual([]);
    // Every example of a request body is a body its schema accepts.
    const ajv = ajvOf(doc);
    const wrong: string[] = [];
    let examples = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item as Record<string, { requestBody?: unknown }>)) {
        const media = (op.requestBody as { content?: Record<string, MediaWithExamples> } | undefined)
          ?.content?.['application/json'];
        for (const { value } of Object.values(media?.examples ?? {})) {
          examples++;
          const validate = ajv.compile({ $ref: `flotilla-openapi${media!.schema.$ref}` });
          if (!validate(value)) wrong.push(`${method} ${path}: ${ajv.errorsText(validate.errors)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(examples).toBeGreaterThanOrEqual(9);
    // Every $ref names a component.
    const refs = JSON.stringify(doc).match(/#\/components\/schemas\/[\w.-]+/g) ?? [];
    const names = Object.keys(doc.components?.schemas ?? {});
    expect([...new Set(refs.map((r) => r.split('/').at(-1)!))].filter((n) => !names.includes(n))).toEqual([]);
  });

  it("validates the hub's real answers of every read (listings as arrays and pages) with ajv", async () => {
    const ajv = ajvOf(doc);
    const failures: string[] = [];
    const check = async (path: string, asked: string) => {
      const answer = await read(asked);
      if (answer.status !== 200)
        return failures.push(`${asked}: ${answer.status} ${JSON.stringify(answer.body)}`);
      const validate = ajv.compile({ $ref: `flotilla-openapi${answerRef(path)}` });
      if (!validate(answer.body))
        failures.push(
          `GET ${asked}: ${ajv.errorsText(validate.errors, { separator: '; ' })} (${JSON.stringify(validate.errors?.[0]?.params)})`,
        );
    };
    const reads = jsonReads();
    for (const { path, asked } of reads) {
      await check(path, asked);
      if (answerRef(path).endsWith('Listing'))
        await check(path, `${asked}${asked.includes('?') ? '&' : '?'}limit=1`);
    }
    expect(failures).toEqual([]);
    // The check can fail: a cluster whose name is a number is not a ClusterListing.
    const listing = ajv.compile({ $ref: `flotilla-openapi${answerRef('/api/v1/clusters')}` });
    expect(listing([{ name: 1 }])).toBe(false);
    // Every listing and the item routes named above were asked.
    expect(reads.length).toBeGreaterThanOrEqual(Object.keys(askedPaths()).length);
  });

  it("type-checks the hub's real answers against a client generated from the document (openapi-typescript)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-openapi-'));
    try {
      writeFileSync(join(dir, 'api.d.ts'), astToString(await openapiTS(doc as never)));
      const lines = [
        "import type { paths } from './api';",
        "type Answer<P extends keyof paths> = paths[P]['get'] extends { responses: { 200: { content: { 'application/json': infer T } } } } ? T : never;",
      ];
      let n = 0;
      for (const { path, asked } of jsonReads()) {
        const answer = await read(asked);
        expect(answer.status, asked).toBe(200);
        lines.push(
          `// GET ${asked}`,
          `export const a${n++}: Answer<'${path}'> = ${JSON.stringify(answer.body)};`,
        );
      }
      // The check can fail: a cluster whose name is a number is refused, and only that line.
      lines.push(`export const wrong: Answer<'/api/v1/clusters'> = [{ name: 1 }];`);
      writeFileSync(join(dir, 'answers.ts'), `${lines.join('\n')}\n`);
      const compilerOptions = {
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        target: 'es2022',
        module: 'esnext',
        moduleResolution: 'bundler',
        types: [],
      };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['answers.ts'] }));
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const run = await promisify(execFile)(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' }).catch(
        (e: { stdout: string }) => ({ stdout: e.stdout }),
      );
      const errors = run.stdout.split('\n').filter((line) => line.includes('error TS'));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`answers.ts(${lines.length},`);
      expect(n).toBeGreaterThan(10);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
