import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';

/** Every error the hub returns: a stable code, a sentence a person can act on, and where in the input. */
export const apiErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  path: z.string().optional(),
  details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  /** The request's id (its `X-Request-Id`), as in the hub's log: the one string to quote in a report. */
  requestId: z.string().optional(),
});
apiErrorSchema.register(apiAnswers, { id: 'ApiError' });
export type ApiError = z.infer<typeof apiErrorSchema>;

/** `a.b[2].c` from a zod issue path, so errors name the offending field. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(root)';
}

export function zodDetails(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: fieldPath(i.path), message: i.message }));
}
