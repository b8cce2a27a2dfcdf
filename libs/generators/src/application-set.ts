import {
  looseLabelSelectorSchema,
  metadataSchema,
  objectNameSchema,
  type LooseLabelSelector,
} from '@flotilla/labels';
import { z } from 'zod';
import { GeneratorError } from './generator-error.js';
import { isPlainObject } from './params.js';

/** The API versions accepted: Argo CD's manifests unchanged, and Flotilla's own (same shape). */
export const APPLICATIONSET_API_VERSIONS = ['argoproj.io/v1alpha1', 'flotilla.dev/v1alpha1'] as const;

export const SUPPORTED_GENERATORS = ['list', 'clusters', 'git', 'matrix', 'merge'] as const;
export type GeneratorKind = (typeof SUPPORTED_GENERATORS)[number];

const stringMap = z.record(z.string(), z.string());

const templateMetadataSchema = z.looseObject({
  name: z.string().optional(),
  namespace: z.string().optional(),
  labels: stringMap.nullish(),
  annotations: stringMap.nullish(),
  finalizers: z.array(z.string()).nullish(),
});

/** A (possibly partial) Application template: generator-level templates fill in the spec-level one. */
export const templateSchema = z.looseObject({
  metadata: templateMetadataSchema.optional(),
  spec: z.record(z.string(), z.unknown()).optional(),
});
export type ApplicationTemplate = z.infer<typeof templateSchema>;

const listSchema = z.looseObject({
  elements: z.array(z.unknown()).nullish(),
  elementsYaml: z.string().nullish(),
  template: templateSchema.optional(),
});

const clustersSchema = z.looseObject({
  selector: looseLabelSelectorSchema.nullish(),
  values: stringMap.nullish(),
  flatList: z.boolean().nullish(),
  template: templateSchema.optional(),
});

const gitItemSchema = z.looseObject({ path: z.string(), exclude: z.boolean().nullish() });

const gitSchema = z.looseObject({
  repoURL: z.string().min(1),
  revision: z.string().default('HEAD'),
  directories: z.array(gitItemSchema).nullish(),
  files: z.array(gitItemSchema).nullish(),
  values: stringMap.nullish(),
  pathParamPrefix: z.string().nullish(),
  requeueAfterSeconds: z.number().nullish(),
  template: templateSchema.optional(),
});

const matrixSchema = z.looseObject({
  generators: z.array(z.unknown()),
  template: templateSchema.optional(),
});

const mergeSchema = z.looseObject({
  generators: z.array(z.unknown()),
  mergeKeys: z.array(z.string()).nullish(),
  template: templateSchema.optional(),
});

export type ListGenerator = z.infer<typeof listSchema>;
export type ClustersGenerator = z.infer<typeof clustersSchema>;
export type GitGenerator = z.infer<typeof gitSchema>;
export type MatrixGenerator = z.infer<typeof matrixSchema>;
export type MergeGenerator = z.infer<typeof mergeSchema>;

const generatorSchemas = {
  list: listSchema,
  clusters: clustersSchema,
  git: gitSchema,
  matrix: matrixSchema,
  merge: mergeSchema,
} as const;

/** One generator, validated: exactly one kind, plus its optional post-selector. */
export type GeneratorSpec = (
  | { kind: 'list'; list: ListGenerator }
  | { kind: 'clusters'; clusters: ClustersGenerator }
  | { kind: 'git'; git: GitGenerator }
  | { kind: 'matrix'; matrix: MatrixGenerator }
  | { kind: 'merge'; merge: MergeGenerator }
) & { selector?: LooseLabelSelector | null | undefined };

// Argo CD generators Flotilla does not implement: named in errors so the user knows why.
const KNOWN_UNSUPPORTED = ['scmProvider', 'pullRequest', 'clusterDecisionResource', 'plugin'];

const specSchema = z.looseObject({
  goTemplate: z.boolean().nullish(),
  goTemplateOptions: z.array(z.string()).nullish(),
  applyNestedSelectors: z.boolean().nullish(),
  generators: z.array(z.unknown()),
  template: templateSchema,
  templatePatch: z.string().nullish(),
  syncPolicy: z
    .looseObject({
      preserveResourcesOnDeletion: z.boolean().nullish(),
      applicationsSync: z.enum(['create-only', 'create-update', 'create-delete', 'sync']).nullish(),
    })
    .nullish(),
});

const appSetSchema = z.looseObject({
  apiVersion: z.enum(APPLICATIONSET_API_VERSIONS).optional(),
  kind: z.literal('ApplicationSet').optional(),
  metadata: z
    .looseObject({
      name: z.string().optional(),
      namespace: z.string().optional(),
    })
    .optional(),
  spec: specSchema,
});

export interface ApplicationSet {
  apiVersion?: string;
  kind?: 'ApplicationSet';
  metadata: { name?: string; namespace?: string } & Record<string, unknown>;
  spec: {
    goTemplate: boolean;
    goTemplateOptions: string[];
    /** Argo CD ignores selectors on the children of a nested matrix/merge unless this is true. */
    applyNestedSelectors: boolean;
    /** Validated generators, in order. */
    generators: GeneratorSpec[];
    template: ApplicationTemplate;
    templatePatch?: string;
    syncPolicy?: z.infer<typeof specSchema>['syncPolicy'];
  };
}

/**
 * An ApplicationSet as a Flotilla object written in a fleet repository (Argo CD's or Flotilla's
 * form): a name, and two Flotilla fields, `spec.project` (the Project every generated target belongs
 * to) and `spec.rolloutStrategy` (the RolloutStrategy that moves a change across the fleet). This
 * schema checks that envelope (and is published as its JSON Schema); the generators and template are
 * checked by parseApplicationSet, as `flotilla generate` and the hub do.
 */
export const applicationSetObjectSchema = z.looseObject({
  apiVersion: z.enum(APPLICATIONSET_API_VERSIONS),
  kind: z.literal('ApplicationSet'),
  metadata: metadataSchema,
  spec: z.looseObject({
    project: objectNameSchema.optional(),
    rolloutStrategy: objectNameSchema.optional(),
    goTemplate: z.boolean().optional(),
    generators: z
      .array(z.record(z.string(), z.unknown()))
      .min(1, 'at least one generator is required')
      .meta({ description: 'Argo CD generators: list, clusters, git, matrix, merge' }),
    template: z.looseObject({
      metadata: z.record(z.string(), z.unknown()).optional(),
      spec: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
});

/** A valid ApplicationSet object: the envelope, with the spec as parseApplicationSet reads it. */
export interface ApplicationSetObject {
  apiVersion: (typeof APPLICATIONSET_API_VERSIONS)[number];
  kind: 'ApplicationSet';
  metadata: { name: string } & Record<string, unknown>;
  spec: ApplicationSet['spec'] & { project?: string; rolloutStrategy?: string };
}

// The hub's rule for a submitted ApplicationSet's name (looser than objectNameSchema's DNS-1123
// subdomain: `a..b` passes here); a fleet repository's objects are held to objectNameSchema first.
const SUBMITTED_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * Why a submitted document is not an ApplicationSet at all, before its spec is read: not a JSON
 * object, no apiVersion, or another kind. `{ path, message }`, or null when the envelope is one.
 */
export function applicationSetEnvelopeProblem(doc: unknown): { path: string; message: string } | null {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    return { path: '(root)', message: 'the body must be an ApplicationSet document (a JSON object)' };
  const o = doc as Record<string, unknown>;
  if (o['apiVersion'] === undefined)
    return {
      path: 'apiVersion',
      message: 'apiVersion is required (flotilla.dev/v1alpha1 or argoproj.io/v1alpha1)',
    };
  if (o['kind'] !== 'ApplicationSet')
    return { path: 'kind', message: `kind must be ApplicationSet, got ${JSON.stringify(o['kind'])}` };
  return null;
}

/** Why `name` cannot name a submitted ApplicationSet (`metadata.name`), or null. */
export function applicationSetNameProblem(name: string): string | null {
  return SUBMITTED_NAME.test(name) && name.length <= 253
    ? null
    : 'metadata.name is required: lower-case letters, digits, "-" and ".", starting and ending alphanumeric';
}

/** Validates an ApplicationSet document (Argo CD's or Flotilla's); throws GeneratorError with the field path. */
export function parseApplicationSet(doc: unknown): ApplicationSet {
  const parsed = appSetSchema.safeParse(doc);
  if (!parsed.success) throw zodError(parsed.error, '');
  const { spec } = parsed.data;
  const generators = spec.generators.map((g, i) => parseGenerator(g, `spec.generators[${i}]`, 0));
  return {
    ...(parsed.data.apiVersion !== undefined && { apiVersion: parsed.data.apiVersion }),
    ...(parsed.data.kind !== undefined && { kind: parsed.data.kind }),
    metadata: parsed.data.metadata ?? {},
    spec: {
      goTemplate: spec.goTemplate ?? false,
      goTemplateOptions: spec.goTemplateOptions ?? [],
      applyNestedSelectors: spec.applyNestedSelectors ?? false,
      generators,
      template: spec.template,
      ...(spec.templatePatch != null && { templatePatch: spec.templatePatch }),
      ...(spec.syncPolicy != null && { syncPolicy: spec.syncPolicy }),
    },
  };
}

/**
 * Validates one generator. `depth` counts enclosing matrix/merge generators: Argo CD allows one
 * nested matrix/merge level, whose children must be plain generators.
 */
export function parseGenerator(raw: unknown, path: string, depth: number): GeneratorSpec {
  if (!isPlainObject(raw)) throw new GeneratorError('invalid-appset', 'a generator must be an object', path);
  const kinds = Object.keys(raw).filter((k) => k !== 'selector' && raw[k] != null);
  const unknown = kinds.filter((k) => !(SUPPORTED_GENERATORS as readonly string[]).includes(k));
  if (unknown.length > 0) {
    const name = unknown[0] ?? '';
    const why = KNOWN_UNSUPPORTED.includes(name)
      ? 'is not supported by Flotilla'
      : 'is not a known generator';
    throw new GeneratorError(
      'unknown-generator',
      `generator '${name}' ${why} (supported: ${SUPPORTED_GENERATORS.join(', ')})`,
      path,
    );
  }
  if (kinds.length === 0) {
    throw new GeneratorError(
      'invalid-appset',
      `no generator given (expected one of: ${SUPPORTED_GENERATORS.join(', ')})`,
      path,
    );
  }
  if (kinds.length > 1) {
    throw new GeneratorError('invalid-appset', `one generator per entry, found ${kinds.join(' and ')}`, path);
  }
  const kind = kinds[0] as GeneratorKind;
  const selector =
    raw['selector'] == null
      ? undefined
      : validate(looseLabelSelectorSchema, raw['selector'], `${path}.selector`);
  const body = validate(generatorSchemas[kind], raw[kind], `${path}.${kind}`);
  if (kind === 'matrix' || kind === 'merge') {
    if (depth >= 2) {
      throw new GeneratorError(
        'invalid-appset',
        `${kind} is nested too deeply: a nested matrix or merge may only hold list, clusters or git generators`,
        path,
      );
    }
    const children = (body as MatrixGenerator).generators;
    children.forEach((c, i) => parseGenerator(c, `${path}.${kind}.generators[${i}]`, depth + 1));
  }
  return { kind, [kind]: body, ...(selector && { selector }) } as GeneratorSpec;
}

function validate<T extends z.ZodType>(schema: T, value: unknown, path: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodError(parsed.error, path);
  return parsed.data;
}

function zodError(error: z.ZodError, base: string): GeneratorError {
  const issue = error.issues[0];
  let path = base;
  for (const seg of issue?.path ?? []) {
    path += typeof seg === 'number' ? `[${seg}]` : path === '' ? String(seg) : `.${String(seg)}`;
  }
  return new GeneratorError('invalid-appset', issue?.message ?? 'invalid', path || undefined);
}
