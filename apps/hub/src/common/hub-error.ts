import { zodDetails, type ApiError } from '@flotilla/contract';
import type { z } from 'zod';

/** An error the hub answers with: HTTP status, stable code, a sentence a person can act on, and where. */
export class HubError extends Error {
  override readonly name = 'HubError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly path?: string,
    readonly details?: ApiError['details'],
    /** Response headers that belong to the error, e.g. Retry-After on a 429. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  toApiError(): ApiError {
    const body: ApiError = { code: this.code, message: this.message };
    if (this.path !== undefined) body.path = this.path;
    if (this.details !== undefined) body.details = this.details;
    return body;
  }

  static notFound(what: string, name: string): HubError {
    return new HubError(404, 'not-found', `${what} "${name}" does not exist`);
  }
}

/** Validates a request body (or query) with zod; a failure names every offending field. */
export function parseInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
  what = 'request body',
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details = zodDetails(result.error);
  const first = details[0];
  return fail(
    new HubError(
      400,
      'invalid-request',
      `invalid ${what}: ${first ? `${first.path}: ${first.message}` : 'unreadable'}`,
      first?.path,
      details,
    ),
  );
}

function fail(e: HubError): never {
  throw e;
}
