import { z } from 'zod';

/**
 * The named schemas of the hub's OpenAPI document (its `components.schemas`): each zod schema the
 * hub answers with or validates a request with is registered here once, under a stable name, next
 * to its definition; the document refers to it by `$ref`. Answers are described as the hub sends
 * them (zod's output), inputs as a client may send them (zod's input: defaults are optional).
 */
export const apiAnswers = z.registry<{ id: string }>();
export const apiInputs = z.registry<{ id: string }>();

/** JSON Schema as OpenAPI 3.0 reads it. */
export type OpenApiSchema = Record<string, unknown>;

const COMPONENTS = '#/components/schemas/';

/** `{$ref}` to a registered schema; throws when it is not registered (a route would be untyped). */
export function apiSchemaRef(schema: z.ZodType, as: 'answer' | 'input'): { $ref: string } {
  const id = (as === 'answer' ? apiAnswers : apiInputs).get(schema)?.id;
  if (id === undefined)
    throw new Error(
      `the ${as} schema is not registered in ${as === 'answer' ? 'apiAnswers' : 'apiInputs'}: name it there`,
    );
  return { $ref: `${COMPONENTS}${id}` };
}

/**
 * `components.schemas` of every registered schema, answers and inputs; a name given to two schemas
 * is refused (one name, one shape).
 */
export function apiComponentSchemas(): Record<string, OpenApiSchema> {
  const answers = componentsOf(apiAnswers, 'output');
  const inputs = componentsOf(apiInputs, 'input');
  for (const name of Object.keys(inputs)) {
    if (name in answers) throw new Error(`the schema name ${name} is both an answer's and an input's`);
  }
  const all = { ...answers, ...inputs };
  typeNullableRefs(all, all);
  return all;
}

/**
 * A nullable named schema comes out of zod as `{nullable: true, allOf: [{$ref}]}`; OpenAPI 3.0 only
 * reads `nullable` beside a `type`, so the referenced schema's type is written there too.
 */
function typeNullableRefs(node: unknown, components: Record<string, OpenApiSchema>): void {
  if (node === null || typeof node !== 'object') return;
  const schema = node as OpenApiSchema;
  const [only] = Array.isArray(schema.allOf) ? (schema.allOf as { $ref?: string }[]) : [];
  if (schema.nullable === true && schema.type === undefined && only?.$ref?.startsWith(COMPONENTS)) {
    const type = components[only.$ref.slice(COMPONENTS.length)]?.type;
    if (type !== undefined) schema.type = type;
  }
  for (const child of Object.values(schema)) typeNullableRefs(child, components);
}

function componentsOf(registry: typeof apiAnswers, io: 'input' | 'output'): Record<string, OpenApiSchema> {
  const { schemas } = z.toJSONSchema(registry, {
    target: 'openapi-3.0',
    io,
    unrepresentable: 'any',
    uri: (id) => `${COMPONENTS}${id}`,
  });
  const out: Record<string, OpenApiSchema> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    // Each is a component of the document, not a document with its own base URI.
    const { $id: _id, ...rest } = schema as OpenApiSchema;
    out[name] = rest;
  }
  return out;
}

/** An inline schema (a query parameter's), in the document's dialect. */
export function openApiSchemaOf(schema: z.ZodType, io: 'input' | 'output' = 'output'): OpenApiSchema {
  return z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' });
}

/**
 * A listing's answer, registered as `<Name>Listing`: the plain array, or with `limit` or `cursor`
 * one page `{items, nextCursor}` (the hub's `Page<T>`).
 */
export function listingSchema<T extends z.ZodType>(item: T, name: string) {
  const listing = z.union([
    z.array(item),
    z.object({
      items: z.array(item),
      nextCursor: z.string().nullable().describe('pass back as cursor for the next page; null on the last'),
    }),
  ]);
  listing.register(apiAnswers, { id: `${name}Listing` });
  return listing;
}
