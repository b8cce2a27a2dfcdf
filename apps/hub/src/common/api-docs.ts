import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiQuery, ApiResponse, type OpenAPIObject } from '@nestjs/swagger';
import {
  apiComponentSchemas,
  apiErrorSchema,
  apiInputs,
  apiSchemaRef,
  openApiSchemaOf,
  type OpenApiSchema,
} from '@flotilla/contract';
import type { z } from 'zod';

/**
 * The OpenAPI decorators of the hub's routes, each taking the zod schema the route answers with or
 * validates with — the same object, so the document cannot describe another shape than the hub's.
 * Schemas are named in libs/contract's `apiAnswers` / `apiInputs` registries (`$ref`s here).
 */

/** The route's success answer (200 unless `status` says otherwise; several for 201-or-200 routes). */
export function ApiAnswer(
  schema: z.ZodType,
  options: { status?: number | number[]; description?: string; type?: string } = {},
): MethodDecorator {
  const ref = apiSchemaRef(schema, 'answer');
  const statuses = [options.status ?? 200].flat();
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: options.description ?? (status === 201 ? 'created' : 'success'),
        content: { [options.type ?? 'application/json']: { schema: ref } },
      }),
    ),
  );
}

/**
 * The route's request body: the schema it is parsed with (`parseInput`). A schema of the hub's own
 * (not named in libs/contract) is named here, once, by its route. `example`: a body a person would
 * send (the OpenAPI spec checks it against the schema).
 */
export function ApiInput(
  schema: z.ZodType,
  name?: string,
  options: { required?: boolean; example?: unknown } = {},
): MethodDecorator {
  const known = apiInputs.get(schema)?.id;
  if (known === undefined && name !== undefined) schema.register(apiInputs, { id: name });
  else if (name !== undefined && known !== name) throw new Error(`input ${name} is already named ${known}`);
  return ApiBody({
    schema: apiSchemaRef(schema, 'input'),
    required: options.required ?? true,
    ...(options.example !== undefined && { examples: { example: { value: options.example } } }),
  });
}

/** One query parameter per field of the route's query schema, typed and described as it is parsed. */
export function ApiQueryOf(schema: z.ZodObject<Record<string, z.ZodType>>): MethodDecorator {
  const fields = Object.entries(schema.shape);
  return applyDecorators(
    ...fields.map(([name, field]) => {
      const { description, ...typed } = openApiSchemaOf(field, 'input');
      return ApiQuery({
        name,
        required: !field.safeParse(undefined).success,
        schema: typed,
        ...(typeof description === 'string' && { description }),
      });
    }),
  );
}

const ERROR_ANSWERS = {
  '4XX': 'refused: the code names why, path the offending field',
  '5XX': 'the hub failed; the requestId is in its log',
} as const;

/**
 * Completes Nest's document: the named schemas as components, and on every operation the one error
 * shape (`ApiError`) every 4xx and 5xx answer has.
 */
export function completeApiDocument(document: OpenAPIObject): OpenAPIObject {
  const error = { $ref: apiSchemaRef(apiErrorSchema, 'answer').$ref };
  for (const item of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (!operation) continue;
      for (const [status, description] of Object.entries(ERROR_ANSWERS)) {
        operation.responses[status] ??= { description, content: { 'application/json': { schema: error } } };
      }
    }
  }
  const schemas: Record<string, OpenApiSchema> = apiComponentSchemas();
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...schemas } };
  return document;
}
